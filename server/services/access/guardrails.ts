import type { Chat } from "../../generated/prisma/client";
import type { Query } from "../../db";
import { ApiError } from "../../kernel/errors";
import { normalizeHandle } from "../../kernel/handles";
import type { Guardrails } from "../../kernel/guardrails";
import type { Actor } from "./actor";

// Guardrails of an API key handed to an automated sender (an agent): whom it may write to,
// whether a person approves each send, how often it may write to a chat that has not answered,
// and how much it may send a day. They are rules of the key, so they hold on every transport
// (REST, GraphQL, MCP, the client and CLI): the send service checks them before anything is
// stored, and a refused send leaves nothing behind. docs/agents.md explains them.

/**
 * The scope that approves held sends and pauses or resumes chats: the supervisor's. A key with
 * any guardrail (an automated sender) can never hold it, or it could approve its own sends or
 * lift a pause the owner set.
 */
export const APPROVE_SCOPE = "outbox:approve";

export function checkApprovalScope(scopes: readonly string[], guardrails: Guardrails | null): void {
  if (guardrails && scopes.includes(APPROVE_SCOPE)) {
    throw new ApiError(
      "invalid_parameter_value",
      `A key with guardrails cannot hold the '${APPROVE_SCOPE}' scope: it could approve its own sends or resume a chat the owner paused.`,
      { param: "scopes" },
    );
  }
}

const notAllowed = (to: string) =>
  new ApiError("recipient_not_allowed", `This API key may not send to ${to}: it is not on the key's allow_to list.`, { param: "to" });

/**
 * allow_to, for a contact a send would open a new chat with: one the key does not list is
 * refused before anything (a chat) is stored for it.
 */
export function checkRecipientName(actor: Actor, to: string): void {
  const allow = actor.guardrails?.allow_to;
  if (!allow) return;
  const value = to.trim();
  if (value.startsWith("cht_")) return;
  if (!allow.includes(normalizeHandle(value))) throw notAllowed(value);
}

/** allow_to and human takeover, for the chat a send goes to. */
export function checkChat(actor: Actor, chat: Chat): void {
  const g = actor.guardrails;
  if (!g) return;
  if (g.allow_to && !g.allow_to.includes(chat.id) && !g.allow_to.includes(chat.identifier)) throw notAllowed(chat.isGroup ? chat.id : chat.identifier);
  if (chat.pausedAt) {
    throw new ApiError(
      "chat_paused",
      `The owner has paused automated sending in chat ${chat.id} (since ${chat.pausedAt.toISOString()}): a person is answering. Sends resume once the owner resumes the chat.`,
      { param: "to" },
    );
  }
}

/** The kinds of outbox item that count as sends for approval and the daily cap (typing and receipts carry no content). */
export const GUARDED_KINDS: readonly string[] = ["message", "audio_message", "reaction"];
/** The kinds that count against max_sends_per_chat_without_reply. */
const REPLY_COUNTED_KINDS = ["message", "audio_message"];

const DAY_MS = 24 * 3_600_000;

/** Items that did not go because a person stopped them do not count. */
const COUNTED = `(error IS NULL OR error NOT IN ('canceled', 'rejected'))`;

/**
 * The counted guardrails of one send by a guarded key, inside the transaction that stores it,
 * after the key's lock: so concurrent sends (on any instance) count each other.
 */
export async function checkSendLimits(query: Query, actor: Actor, kind: string, chatId: string, now = Date.now()): Promise<void> {
  const g = actor.guardrails;
  if (!g || !actor.keyId || !GUARDED_KINDS.includes(kind)) return;
  if (g.max_sends_per_chat_without_reply !== null && REPLY_COUNTED_KINDS.includes(kind)) {
    const [row] = await query<{ n: number }>(
      `SELECT count(*)::int AS n FROM "OutboxItem"
       WHERE "chatId" = $1 AND "apiKeyId" = $2 AND kind = ANY($3::text[]) AND ${COUNTED}
         AND "createdAt" > COALESCE((SELECT "syncedAt" FROM "Message" WHERE "chatId" = $1 AND NOT "isFromMe" ORDER BY "sentAt" DESC, id DESC LIMIT 1), '-infinity')`,
      [chatId, actor.keyId, REPLY_COUNTED_KINDS],
    );
    if ((row?.n ?? 0) >= g.max_sends_per_chat_without_reply) {
      throw new ApiError(
        "reply_required",
        `This API key has sent ${row?.n} messages to chat ${chatId} since the contact last wrote, its limit (max_sends_per_chat_without_reply). Wait for a reply.`,
        { param: "to" },
      );
    }
  }
  if (g.max_sends_per_day !== null) {
    const since = new Date(now - DAY_MS);
    const [row] = await query<{ n: number }>(
      `SELECT count(*)::int AS n FROM "OutboxItem" WHERE "apiKeyId" = $1 AND "createdAt" > $2 AND kind = ANY($3::text[]) AND ${COUNTED}`,
      [actor.keyId, since, GUARDED_KINDS],
    );
    const count = row?.n ?? 0;
    if (count >= g.max_sends_per_day) {
      // The next send fits once enough of the window's oldest sends have slid out of it.
      const [frees] = await query<{ createdAt: Date }>(
        `SELECT "createdAt" FROM "OutboxItem" WHERE "apiKeyId" = $1 AND "createdAt" > $2 AND kind = ANY($3::text[]) AND ${COUNTED}
         ORDER BY "createdAt" OFFSET $4 LIMIT 1`,
        [actor.keyId, since, GUARDED_KINDS, count - g.max_sends_per_day],
      );
      const retryAfter = Math.max(1, Math.ceil((new Date(frees?.createdAt ?? now).getTime() + DAY_MS - now) / 1000));
      throw new ApiError(
        "key_send_limit_exceeded",
        `This API key may send ${g.max_sends_per_day} messages in any 24 hours (max_sends_per_day), and has. Try again in ${retryAfter} s.`,
        { headers: { "Retry-After": String(retryAfter) } },
      );
    }
  }
}

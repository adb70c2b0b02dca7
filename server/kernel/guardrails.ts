import { z } from "zod";
import { ApiError } from "./errors";
import { normalizeHandle } from "./handles";

// The guardrails of an API key: their shape, the owner's input, the stored columns, and the
// checks of the chat a send goes to (docs/agents.md). The checks are here, below both the send
// service and the outbox, because a send is checked at accept and again when SMS fallback moves
// it to another line and chat. The counted ones are in server/outbox/key-limits.ts.

export interface Guardrails {
  /** Normalized handles and chat IDs the key may send to; null: anyone the line may reach. */
  allow_to: string[] | null;
  require_approval: boolean;
  max_sends_per_chat_without_reply: number | null;
  max_sends_per_day: number | null;
}

const MAX_ALLOW_TO = 1_000;
const MAX_LIMIT = 1_000_000;

const limit = z.number().int("must be a whole number").min(1, "must be at least 1").max(MAX_LIMIT).nullable();

/** The guardrails as the owner sets them (dashboard, GraphQL, operator CLI): any subset, null clears one. */
export const GuardrailsInput = z
  .object({
    allow_to: z
      .array(z.string().trim().min(1, "must not be empty").max(320))
      .min(1, "list at least one contact or chat ID, or pass null to allow everyone")
      .max(MAX_ALLOW_TO, `at most ${MAX_ALLOW_TO} entries`)
      .nullable()
      .describe("Contacts (phone numbers in E.164, emails, handles) and cht_ chat IDs the key may send to; null: no restriction"),
    require_approval: z.boolean().describe("Hold every send by the key until the owner approves it"),
    max_sends_per_chat_without_reply: limit.describe("Sends to one chat since its contact last wrote, at most; null: no limit"),
    max_sends_per_day: limit.describe("Sends in any 24 hours, at most; null: no limit"),
  })
  .partial()
  .strict();
export type GuardrailsInput = z.output<typeof GuardrailsInput>;

/** The stored columns of an ApiKey for these guardrails. */
export interface GuardrailColumns {
  allowTo: string[];
  requireApproval: boolean;
  maxSendsPerChatWithoutReply: number | null;
  maxSendsPerDay: number | null;
}

/** An allow-list entry as sends are compared with it: a chat ID as is, a contact normalized. */
function allowEntry(raw: string): string {
  const value = raw.trim();
  return value.startsWith("cht_") ? value : normalizeHandle(value);
}

/** The columns an input changes (absent fields keep their value). */
function guardrailColumns(input: GuardrailsInput): Partial<GuardrailColumns> {
  const out: Partial<GuardrailColumns> = {};
  if (input.allow_to !== undefined) out.allowTo = input.allow_to ? [...new Set(input.allow_to.map(allowEntry))] : [];
  if (input.require_approval !== undefined) out.requireApproval = input.require_approval;
  if (input.max_sends_per_chat_without_reply !== undefined) out.maxSendsPerChatWithoutReply = input.max_sends_per_chat_without_reply;
  if (input.max_sends_per_day !== undefined) out.maxSendsPerDay = input.max_sends_per_day;
  return out;
}

/** The columns of a key without guardrails. */
export const UNGUARDED: GuardrailColumns = { allowTo: [], requireApproval: false, maxSendsPerChatWithoutReply: null, maxSendsPerDay: null };

/** A key's columns after an input changes some of them. */
export function withGuardrails(current: GuardrailColumns, input: GuardrailsInput): GuardrailColumns {
  return { ...current, ...guardrailColumns(input) };
}

/** The guardrails of a key's columns, or null when it has none (an unguarded key). */
export function guardrailsOf(key: GuardrailColumns): Guardrails | null {
  const g: Guardrails = {
    allow_to: key.allowTo.length ? key.allowTo : null,
    require_approval: key.requireApproval,
    max_sends_per_chat_without_reply: key.maxSendsPerChatWithoutReply,
    max_sends_per_day: key.maxSendsPerDay,
  };
  return g.allow_to || g.require_approval || g.max_sends_per_chat_without_reply !== null || g.max_sends_per_day !== null ? g : null;
}

/** The guardrails as the owner reads them (always every field). */
export function serializeGuardrails(key: GuardrailColumns): Guardrails {
  return guardrailsOf(key) ?? { allow_to: null, require_approval: false, max_sends_per_chat_without_reply: null, max_sends_per_day: null };
}

/** Who a send is checked for: a request's caller (an Actor), or the key that made an outbox item. */
export interface Sender {
  /** The API key, or null for the owner's dashboard session. */
  keyId: string | null;
  /** Lines it may use; null: every line of the account. */
  lineIds: ReadonlySet<string> | null;
  guardrails: Guardrails | null;
}

/** What of a chat the guardrails look at. */
export interface GuardedChat {
  id: string;
  identifier: string;
  isGroup: boolean;
  pausedAt: Date | null;
}

const notAllowed = (to: string) =>
  new ApiError("recipient_not_allowed", `This API key may not send to ${to}: it is not on the key's allow_to list.`, { param: "to" });

/**
 * allow_to, for a contact a send would open a new chat with: one the key does not list is
 * refused before anything (a chat) is stored for it.
 */
export function checkRecipientName(sender: Sender, to: string): void {
  const allow = sender.guardrails?.allow_to;
  if (!allow) return;
  const value = to.trim();
  if (value.startsWith("cht_")) return;
  if (!allow.includes(normalizeHandle(value))) throw notAllowed(value);
}

/** allow_to and human takeover, for the chat a send goes to. The owner's sends (no guardrails) pass a pause. */
export function checkChat(sender: Sender, chat: GuardedChat): void {
  const g = sender.guardrails;
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

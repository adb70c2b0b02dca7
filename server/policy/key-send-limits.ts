import type { Query } from "../db";
import { ApiError } from "../kernel/errors";
import type { Sender } from "./key-guardrails";

// Counted inside the transaction that stores a send, after the key's lock, so concurrent sends (on
// any instance) count each other.

/** Typing and receipts carry no content: they need no approval and count for no cap. */
export const GUARDED_KINDS: readonly string[] = ["message", "audio_message", "reaction"];
const REPLY_COUNTED_KINDS = ["message", "audio_message"];

const DAY_MS = 24 * 3_600_000;

const COUNTED = `(error IS NULL OR error NOT IN ('canceled', 'rejected'))`;

/** Until the transaction ends; the account's lock for the owner's session. */
export async function lockSends(query: Query, keyOrAccountId: string): Promise<void> {
  await query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [keyOrAccountId]);
}

export async function checkReplyLimit(query: Query, sender: Sender, kind: string, chatId: string): Promise<void> {
  const limit = sender.guardrails?.max_sends_per_chat_without_reply ?? null;
  if (limit === null || !sender.keyId || !REPLY_COUNTED_KINDS.includes(kind)) return;
  const [row] = await query<{ n: number }>(
    `SELECT count(*)::int AS n FROM "OutboxItem"
     WHERE "chatId" = $1 AND "apiKeyId" = $2 AND kind = ANY($3::text[]) AND ${COUNTED}
       AND "createdAt" > COALESCE((SELECT "syncedAt" FROM "Message" WHERE "chatId" = $1 AND NOT "isFromMe" ORDER BY "sentAt" DESC, id DESC LIMIT 1), '-infinity')`,
    [chatId, sender.keyId, REPLY_COUNTED_KINDS],
  );
  if ((row?.n ?? 0) >= limit) {
    throw new ApiError(
      "reply_required",
      `This API key has sent ${row?.n} messages to chat ${chatId} since the contact last wrote, its limit (max_sends_per_chat_without_reply). Wait for a reply.`,
      { param: "to" },
    );
  }
}

async function checkDailyLimit(query: Query, keyId: string, limit: number, now: number): Promise<void> {
  const since = new Date(now - DAY_MS);
  const [row] = await query<{ n: number }>(
    `SELECT count(*)::int AS n FROM "OutboxItem" WHERE "apiKeyId" = $1 AND "createdAt" > $2 AND kind = ANY($3::text[]) AND ${COUNTED}`,
    [keyId, since, GUARDED_KINDS],
  );
  const count = row?.n ?? 0;
  if (count < limit) return;
  // The next send fits once enough of the window's oldest sends have slid out of it.
  const [frees] = await query<{ createdAt: Date }>(
    `SELECT "createdAt" FROM "OutboxItem" WHERE "apiKeyId" = $1 AND "createdAt" > $2 AND kind = ANY($3::text[]) AND ${COUNTED}
     ORDER BY "createdAt" OFFSET $4 LIMIT 1`,
    [keyId, since, GUARDED_KINDS, count - limit],
  );
  const retryAfter = Math.max(1, Math.ceil((new Date(frees?.createdAt ?? now).getTime() + DAY_MS - now) / 1000));
  throw new ApiError(
    "key_send_limit_exceeded",
    `This API key may send ${limit} messages in any 24 hours (max_sends_per_day), and has. Try again in ${retryAfter} s.`,
    { headers: { "Retry-After": String(retryAfter) } },
  );
}

export async function checkSendLimits(query: Query, sender: Sender, kind: string, chatId: string, now = Date.now()): Promise<void> {
  const g = sender.guardrails;
  if (!g || !sender.keyId || !GUARDED_KINDS.includes(kind)) return;
  await checkReplyLimit(query, sender, kind, chatId);
  if (g.max_sends_per_day !== null) await checkDailyLimit(query, sender.keyId, g.max_sends_per_day, now);
}

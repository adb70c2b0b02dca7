import { type Query, sql, sqlTransaction } from "../db";
import type { Chat, Line, OutboxItem } from "../generated/prisma/client";
import { ApiError } from "../kernel/errors";
import { ensureDirectChat } from "../messages/chat-rows";
import type { Sender } from "../policy/key-guardrails";
import { lockSends } from "../policy/key-send-limits";
import { checkChatSend, checkOpening, noFallbackLine, poolSmsCandidates } from "../policy/sms-fallback";

export async function markFallback(item: OutboxItem): Promise<void> {
  await sql(`UPDATE "OutboxItem" SET fallback = true WHERE id = $1`, [item.id]);
  item.fallback = true;
}

/** Hands a claimed item back to go as SMS now, its attempt not counted; `to`: moved to that line and chat. */
export async function requeueAsSms(query: Query, item: OutboxItem, to: { line: Line; chat: Chat } | null): Promise<void> {
  await query(
    `UPDATE "OutboxItem" SET fallback = true, "lineId" = COALESCE($2, "lineId"), status = 'pending', "availableAt" = now(),
       attempts = GREATEST(0, attempts - 1), "claimedBy" = NULL, "leaseExpiresAt" = NULL,
       "chatId" = COALESCE($4, "chatId"), payload = CASE WHEN $4::text IS NULL THEN payload ELSE jsonb_set(payload, '{chat_id}', to_jsonb($4::text)) END
     WHERE id = $1 AND status = 'claimed' AND "claimedBy" IS NOT DISTINCT FROM $3`,
    [item.id, to?.line.id ?? null, item.claimedBy, to?.chat.id ?? null],
  );
}

async function chatOnLine(query: Query, sender: Sender, item: OutboxItem, line: Line, to: string): Promise<Chat> {
  const [found] = await query<Chat>(`SELECT * FROM "Chat" WHERE "lineId" = $1 AND "accountId" = $2 AND identifier = $3`, [line.id, item.accountId, to]);
  checkOpening(sender, line, found ?? null, to);
  const chat = found ?? (await ensureDirectChat(query, { accountId: item.accountId, lineId: line.id, identifier: to, service: "sms" }));
  await checkChatSend(query, sender, item.kind, chat);
  return chat;
}

/** Into the first SMS line of the pool that passes the checks of a new send, under the key's lock: null, or the item's error. */
export async function moveToPoolSmsLine(item: OutboxItem, to: string): Promise<string | null> {
  const candidates = await poolSmsCandidates(item, to);
  if (typeof candidates === "string") return candidates;
  const { sender, lines, hidden } = candidates;
  const refusals = await sqlTransaction(async (query) => {
    const why: string[] = [];
    if (sender.keyId && sender.guardrails && lines.length) await lockSends(query, sender.keyId);
    for (const line of lines) {
      try {
        await requeueAsSms(query, item, { line, chat: await chatOnLine(query, sender, item, line, to) });
        return null;
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        why.push(`From ${line.handle}: ${err.message}`);
      }
    }
    return why;
  });
  if (!refusals) return null;
  // A restricted key is not told the handles of lines it may not use.
  const restricted = hidden === 1 ? "1 SMS line of the pool is not one" : `${hidden} SMS lines of the pool are not ones`;
  return noFallbackLine(item, to, [...(hidden ? [`${restricted} the API key that made the send may use.`] : []), ...refusals]);
}

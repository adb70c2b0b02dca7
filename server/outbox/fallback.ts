import { type Query, sql, sqlTransaction } from "../db";
import { ensureDirectChat } from "../messages/chat-rows";
import { findLine } from "../db/line-cache";
import type { Chat, Line, OutboxItem } from "../generated/prisma/client";
import { ApiError } from "../kernel/errors";
import { checkChat, checkRecipientName, type GuardrailColumns, guardrailsOf, type Sender } from "../kernel/guardrails";
import { checkContactFirst, policyOf } from "../kernel/send-policy";
import { log } from "../kernel/log";
import { platformForLine } from "../platform/connection";
import type { ServiceName } from "../platform/types";
import { checkReplyLimit, lockSends } from "./key-limits";
import { MessagePayload } from "./payloads";

// SMS fallback per recipient. A message that may go by either service (from an `auto` line,
// or from a pool that holds both iMessage and SMS lines) goes by iMessage unless the recipient
// is known not to have it; then as SMS, from the same line when it can send SMS (`auto`: a Mac
// with SMS forwarding), otherwise from an SMS line of the pool that passes the checks of a new
// send from it, for the key that made the send (no_fallback_line when none does). What a line
// learned of a contact (the provider's availability check, or its refusal of a send) is
// remembered a week (Reachability rows, this file their one writer), and learned again when a
// send contradicts it.
//
// Never both: the SMS goes only once the iMessage send is proven not sent (a refusal). A send
// whose outcome is unknown is reconciled first, by the iMessage path that made it.

const REACHABILITY_TTL_MS = 7 * 24 * 3_600_000;

/** Whether a message of this item may go by either service; null when only the line's own. */
function fallbackMode(item: Pick<OutboxItem, "kind" | "poolId" | "payload">, line: Pick<Line, "service">): "same-line" | "pool" | null {
  // The common case (one service, no pool) decides without parsing the payload: it runs per send.
  if (item.kind !== "message" || line.service === "sms" || (line.service !== "auto" && !item.poolId)) return null;
  if (MessagePayload.parse(item.payload).is_group) return null;
  return line.service === "auto" ? "same-line" : "pool";
}

/** What the line knows of `handle`: true/false while fresh, null when unknown or stale. */
async function knownReachability(lineId: string, handle: string, now: number): Promise<boolean | null> {
  const rows = await sql<{ imessage: boolean; checkedAt: Date }>(`SELECT imessage, "checkedAt" FROM "Reachability" WHERE "lineId" = $1 AND handle = $2`, [lineId, handle]);
  const row = rows[0];
  return row && now - new Date(row.checkedAt).getTime() < REACHABILITY_TTL_MS ? row.imessage : null;
}

/** Remembers whether `handle` can receive iMessage, as line `lineId` learned it now. */
async function noteReachability(lineId: string, handle: string, imessage: boolean, now = new Date()): Promise<void> {
  await sql(
    `INSERT INTO "Reachability" ("lineId", handle, imessage, "checkedAt") VALUES ($1, $2, $3, $4)
     ON CONFLICT ("lineId", handle) DO UPDATE SET imessage = EXCLUDED.imessage, "checkedAt" = EXCLUDED."checkedAt"`,
    [lineId, handle, imessage, now],
  );
}

/** Whether the recipient can receive iMessage: remembered, else the provider's check where it has one; null when no one can tell. */
async function reachable(line: Line, handle: string, now: number): Promise<boolean | null> {
  const known = await knownReachability(line.id, handle, now);
  if (known !== null) return known;
  let platform;
  try {
    platform = platformForLine(line);
  } catch {
    return null;
  }
  if (!platform.iMessageReachable) return null;
  const checked = await platform.iMessageReachable(handle).catch((err: unknown) => {
    log().warn({ err, line_id: line.id }, "the provider's iMessage availability check failed");
    return null;
  });
  if (checked !== null) await noteReachability(line.id, handle, checked);
  return checked;
}

/** The outbox error of a send that must fall back to SMS and has no SMS line it may go from. */
const NO_FALLBACK_LINE = "no_fallback_line";

/** The pool's active SMS lines, in the order a fallback tries them (connected ones first). */
async function poolSmsLines(poolId: string, accountId: string): Promise<Line[]> {
  const rows = await sql<{ lineId: string }>(
    `SELECT pl."lineId" FROM "PoolLine" pl JOIN "Line" l ON l.id = pl."lineId"
     WHERE pl."poolId" = $1 AND l."accountId" = $2 AND l.service = 'sms' AND l."isActive"
     ORDER BY (l.status = 'disconnected'), pl."addedAt"`,
    [poolId, accountId],
  );
  const lines = await Promise.all(rows.map((r) => findLine(r.lineId)));
  return lines.filter((l): l is Line => l !== null);
}

/** Who made the item, with the lines and guardrails its key has now; null when the key is gone. */
async function senderOf(item: OutboxItem): Promise<Sender | null> {
  if (!item.apiKeyId) return { keyId: null, lineIds: null, guardrails: null }; // the owner's dashboard session
  const [key] = await sql<GuardrailColumns & { lineRestricted: boolean; lineIds: string[] }>(
    `SELECT "lineRestricted", "lineIds", "allowTo", "requireApproval", "maxSendsPerChatWithoutReply", "maxSendsPerDay"
     FROM "ApiKey" WHERE id = $1 AND "accountId" = $2`,
    [item.apiKeyId, item.accountId],
  );
  return key ? { keyId: item.apiKeyId, lineIds: key.lineRestricted ? new Set(key.lineIds) : null, guardrails: guardrailsOf(key) } : null;
}

/**
 * The contact's chat on `line` if the sender may send it this message there: the checks of a
 * new send from that line (contact-first or, where the line may write first, allow_to before a
 * chat is opened; then allow_to, a pause and the reply limit for the chat). Throws the refusal.
 * The line's quiet hours and budgets apply at the item's next claim, on that line.
 */
async function fallbackChat(query: Query, sender: Sender, item: OutboxItem, line: Line, to: string): Promise<Chat> {
  const [found] = await query<Chat>(`SELECT * FROM "Chat" WHERE "lineId" = $1 AND "accountId" = $2 AND identifier = $3`, [line.id, item.accountId, to]);
  if (policyOf(line).contact_first) checkContactFirst(line, found ?? null, to);
  else if (!found) checkRecipientName(sender, to);
  const chat = found ?? (await ensureDirectChat(query, { accountId: item.accountId, lineId: line.id, identifier: to, service: "sms" }));
  checkChat(sender, chat);
  await checkReplyLimit(query, sender, item.kind, chat.id);
  return chat;
}

/**
 * Hands a claimed message to the first SMS line of its pool it may go from, into the contact's
 * chat there: null when it did, else why no line may send it (the item's error). Only the
 * pool's lines the key may use are tried, each with the checks of a new send from it, under
 * the key's lock (its counted guardrails).
 */
async function moveToPoolSmsLine(item: OutboxItem): Promise<string | null> {
  const to = MessagePayload.parse(item.payload).to;
  const noLine = (reasons: string[]) =>
    `${NO_FALLBACK_LINE}: ${to} cannot receive iMessage, and no SMS line of pool ${item.poolId} may send this message instead. ${reasons.join(" ")}`;
  const sender = await senderOf(item);
  if (!sender) return noLine(["The API key that made the send no longer exists."]);
  const lines = await poolSmsLines(item.poolId!, item.accountId);
  if (!lines.length) return noLine(["The pool has no active SMS line."]);
  const usable = lines.filter((l) => !sender.lineIds || sender.lineIds.has(l.id));
  const refusals = await sqlTransaction(async (query) => {
    const why: string[] = [];
    if (sender.keyId && sender.guardrails && usable.length) await lockSends(query, sender.keyId);
    for (const line of usable) {
      try {
        await requeueAsSms(query, item, { line, chat: await fallbackChat(query, sender, item, line, to) });
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
  const hidden = lines.length - usable.length;
  const restricted = hidden === 1 ? "1 SMS line of the pool is not one" : `${hidden} SMS lines of the pool are not ones`;
  return noLine([...(hidden ? [`${restricted} the API key that made the send may use.`] : []), ...refusals]);
}

/**
 * Marks a claimed item to go as SMS and hands it back, due now; its attempt is not counted.
 * Moved to another line (`to`), it goes into the contact's chat there.
 */
async function requeueAsSms(query: Query, item: OutboxItem, to: { line: Line; chat: Chat } | null): Promise<void> {
  await query(
    `UPDATE "OutboxItem" SET fallback = true, "lineId" = COALESCE($2, "lineId"), status = 'pending', "availableAt" = now(),
       attempts = GREATEST(0, attempts - 1), "claimedBy" = NULL, "leaseExpiresAt" = NULL,
       "chatId" = COALESCE($4, "chatId"), payload = CASE WHEN $4::text IS NULL THEN payload ELSE jsonb_set(payload, '{chat_id}', to_jsonb($4::text)) END
     WHERE id = $1 AND status = 'claimed' AND "claimedBy" IS NOT DISTINCT FROM $3`,
    [item.id, to?.line.id ?? null, item.claimedBy, to?.chat.id ?? null],
  );
}

export type Route = { go: true } | { go: false; reason: string | null };

/**
 * The service step of the policy, at the claim: whether a claimed item goes from its line now
 * (by the service `item.fallback` says), or was handed to the pool's SMS line. `reason` when
 * it cannot go at all (a contact without iMessage, and no SMS line of the pool it may go from).
 */
export async function routeService(item: OutboxItem, line: Line, now = Date.now()): Promise<Route> {
  const mode = fallbackMode(item, line);
  // An attempt that may have sent by iMessage is reconciled first, by the path that made it.
  if (!mode || item.unknownSince) return { go: true };
  if (!item.fallback) {
    const to = MessagePayload.parse(item.payload).to;
    if ((await reachable(line, to, now)) !== false) return { go: true };
    await sql(`UPDATE "OutboxItem" SET fallback = true WHERE id = $1`, [item.id]);
    item.fallback = true;
  }
  if (mode === "same-line") return { go: true };
  return { go: false, reason: await moveToPoolSmsLine(item) };
}

/** The service a message is sent by, for the provider: set only where it may fall back. */
export function sendService(item: OutboxItem, line: Line): ServiceName | undefined {
  if (line.service === "sms" && item.fallback) return "sms";
  return fallbackMode(item, line) ? (item.fallback ? "sms" : "imessage") : undefined;
}

/**
 * What a send's answer teaches: an iMessage send accepted means the contact has iMessage; a
 * refusal as not registered means they have not, and a message that may fall back goes
 * again as SMS at once (the refusal proves nothing was sent). True when the item was handed
 * back for that.
 */
export async function learnFromSend(item: OutboxItem, line: Line, result: { ok: boolean; service?: ServiceName; notIMessage?: boolean }): Promise<boolean> {
  const mode = fallbackMode(item, line);
  if (!mode && !result.notIMessage) return false;
  const to = MessagePayload.parse(item.payload).to;
  if (result.ok) {
    if (mode && result.service === "imessage") await noteReachability(line.id, to, true);
    return false;
  }
  if (!result.notIMessage) return false;
  await noteReachability(line.id, to, false);
  if (!mode || item.fallback) return false;
  await requeueAsSms(sql, item, null);
  return true;
}

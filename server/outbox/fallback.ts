import { sql, sqlTransaction } from "../db";
import { ensureDirectChat } from "../messages/direct-chats";
import { findLine } from "../db/line-cache";
import type { Line, OutboxItem } from "../generated/prisma/client";
import { log } from "../observability/log";
import { platformForLine } from "../platform/connection";
import type { ServiceName } from "../platform/types";
import { MessagePayload } from "./payloads";

// SMS fallback per recipient. A message that may go by either service (from an `auto` line,
// or from a pool that holds both iMessage and SMS lines) goes by iMessage unless the recipient
// is known not to have it; then as SMS, from the same line when it can send SMS (`auto`: a Mac
// with SMS forwarding), otherwise from an SMS line of the pool. What a line learned of a
// contact (the provider's availability check, or its refusal of a send) is remembered a week
// (Reachability rows, this file their one writer), and learned again when a send contradicts it.
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

/** The pool's SMS line a fallback goes from (the first connected one, else any). */
async function poolSmsLine(poolId: string, accountId: string): Promise<Line | null> {
  const rows = await sql<{ lineId: string }>(
    `SELECT pl."lineId" FROM "PoolLine" pl JOIN "Line" l ON l.id = pl."lineId"
     WHERE pl."poolId" = $1 AND l."accountId" = $2 AND l.service = 'sms' AND l."isActive"
     ORDER BY (l.status = 'disconnected'), pl."addedAt" LIMIT 1`,
    [poolId, accountId],
  );
  return rows[0] ? findLine(rows[0].lineId) : null;
}

/**
 * Marks a claimed item to go as SMS and hands it back, due now; its attempt is not counted.
 * Moved to another line (`toLine`), it goes into the contact's chat there, opened when new:
 * the contact wrote to the pool, so its SMS line may answer.
 */
async function requeueAsSms(item: OutboxItem, toLine: Line | null): Promise<void> {
  await sqlTransaction(async (query) => {
    let chatId: string | null = null;
    if (toLine) {
      const to = MessagePayload.parse(item.payload).to;
      chatId = (await ensureDirectChat(query, { accountId: item.accountId, lineId: toLine.id, identifier: to, service: "sms" })).id;
    }
    await query(
      `UPDATE "OutboxItem" SET fallback = true, "lineId" = COALESCE($2, "lineId"), status = 'pending', "availableAt" = now(),
         attempts = GREATEST(0, attempts - 1), "claimedBy" = NULL, "leaseExpiresAt" = NULL,
         "chatId" = COALESCE($4, "chatId"), payload = CASE WHEN $4::text IS NULL THEN payload ELSE jsonb_set(payload, '{chat_id}', to_jsonb($4::text)) END
       WHERE id = $1 AND status = 'claimed' AND "claimedBy" IS NOT DISTINCT FROM $3`,
      [item.id, toLine?.id ?? null, item.claimedBy, chatId],
    );
  });
}

export type Route = { go: true } | { go: false; reason: string | null };

/**
 * The service step of the policy, at the claim: whether a claimed item goes from its line now
 * (by the service `item.fallback` says), or was handed to the pool's SMS line. `reason` when
 * it cannot go at all (a pool without an SMS line for a contact without iMessage).
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
  const sms = await poolSmsLine(item.poolId!, item.accountId);
  if (!sms) return { go: false, reason: "the recipient cannot receive iMessage, and the pool has no SMS line to fall back to" };
  await requeueAsSms(item, sms);
  return { go: false, reason: null };
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
  await requeueAsSms(item, null);
  return true;
}

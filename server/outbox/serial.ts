import { sql } from "../db";
import type { Line, OutboxItem } from "../generated/prisma/client";
import { serialProviderNames } from "../platform/connection";
import { PROVIDER_NAMES, providerFor } from "../platform/registry";
import { findLine } from "../db/line-cache";
import { config } from "../kernel/config";
import { admit } from "./holds";
import { claimOne, failClaimed, LEASE_MS } from "./queue";

// Provider lines send one item at a time, in outbox order, paced: a real Apple ID or SIM that
// sends a burst gets flagged, and a conversation read out of order is wrong. The head of a
// line (its oldest item still pending or claimed) is the only one that may be claimed, and
// only once the line's pacing slot (Line.nextSendAt, 1 / sendRatePerSecond apart) is free. Both
// conditions are checked in the claiming statement itself, so instances never race.

const SERIAL = serialProviderNames(PROVIDER_NAMES);

/** Whether lines of this provider send one item at a time, in order (the provider-line loop's). */
export const sendsSerially = (provider: string): boolean => SERIAL.includes(provider);

/**
 * The items of a line that keep its order ($2 is now): claimed ones, pending ones (also those
 * waiting for a retry), and held ones once due. A held item waiting for its time is not in
 * line: what comes after it goes first.
 */
const inLine = (t = "") => `(${t}status IN ('pending', 'claimed') OR (${t}status = 'held' AND ${t}"availableAt" <= $2))`;

/** Margin of a claim's lease over the provider's own send timeout. */
const LEASE_MARGIN_MS = 60_000;

export interface LineHead {
  id: string;
  lineId: string;
}

/** Heads of provider lines that are due now, their line's pacing slot free and the line not disconnected. */
export async function dueLineHeads(now = new Date()): Promise<LineHead[]> {
  return sql<LineHead>(
    `WITH heads AS (
       SELECT DISTINCT ON (o."lineId") o.id, o."lineId", o.status, o."availableAt"
       FROM "OutboxItem" o
       WHERE ${inLine("o.")}
         AND o."lineId" IN (SELECT id FROM "Line" WHERE platform = ANY($1::text[]) AND status <> 'disconnected'
                            AND ("nextSendAt" IS NULL OR "nextSendAt" <= $2))
       ORDER BY o."lineId", o.id)
     SELECT id, "lineId" FROM heads WHERE status IN ('pending', 'held') AND "availableAt" <= $2`,
    [SERIAL, now],
  );
}

/** Whether any provider line has an item waiting (pending or claimed). */
export async function serialBacklog(): Promise<boolean> {
  // Held items that are not due yet are no backlog: a month of scheduled sends costs no polling.
  const rows = await sql(
    `SELECT 1 FROM "OutboxItem" WHERE ${inLine()}
       AND "lineId" IN (SELECT id FROM "Line" WHERE platform = ANY($1::text[])) LIMIT 1`,
    [SERIAL, new Date()],
  );
  return rows.length > 0;
}

/** How long a claim on this line must last: past the provider's own send timeout. */
function leaseMsFor(line: Line | null): number {
  if (!line) return LEASE_MS;
  const provider = providerFor(line.provider);
  const timeout = provider.sendTimeoutMs?.(provider.load(line.providerSettings, null).settings) ?? LEASE_MS;
  return Math.max(LEASE_MS, timeout + LEASE_MARGIN_MS);
}

/**
 * Claims item `id` if it is its line's head, due, and the line's pacing slot is free (taking
 * the slot). Null when any of that does not hold.
 */
export async function claimHead(id: string, lineId: string, claimedBy: string, now = new Date()): Promise<OutboxItem | null> {
  const line = await findLine(lineId);
  const rate = line && line.sendRatePerSecond > 0 ? line.sendRatePerSecond : 1;
  const nextSlot = new Date(now.getTime() + Math.ceil(1000 / rate));
  const lease = new Date(now.getTime() + leaseMsFor(line));
  const rows = await sql<OutboxItem>(
    `WITH head AS (
       SELECT id FROM "OutboxItem" WHERE "lineId" = $1 AND ${inLine()} ORDER BY id LIMIT 1),
     slot AS (
       UPDATE "Line" SET "nextSendAt" = $3
       WHERE id = $1 AND status <> 'disconnected' AND ("nextSendAt" IS NULL OR "nextSendAt" <= $2)
         AND EXISTS (SELECT 1 FROM head WHERE head.id = $6)
         AND EXISTS (SELECT 1 FROM "OutboxItem" WHERE id = $6 AND status IN ('pending', 'held') AND "availableAt" <= $2)
       RETURNING id)
     UPDATE "OutboxItem" o SET status = 'claimed', "leaseExpiresAt" = $4, "claimedBy" = $5, attempts = attempts + 1,
       "attemptStartedAt" = $2, "releasedAt" = CASE WHEN o.status = 'held' THEN $2 ELSE o."releasedAt" END, "holdReason" = NULL
     FROM slot WHERE o.id = $6 AND o.status IN ('pending', 'held') AND o."availableAt" <= $2
     RETURNING o.*`,
    [lineId, now, nextSlot, lease, claimedBy, id],
  );
  return rows[0] ?? null;
}

/** When a blocked item on a provider line should be looked at again. */
async function nextChanceAt(lineId: string, now = new Date()): Promise<Date> {
  const line = await findLine(lineId);
  const slot = line?.nextSendAt && line.nextSendAt > now ? line.nextSendAt : null;
  return slot ?? new Date(now.getTime() + 1_000);
}

export type RunClaim = { status: "claimed" } | { status: "skip" } | { status: "wait"; until: string };

/**
 * One engine run's claim of item `id` (Inngest): claimed; skip (already handled, or not due:
 * a later event or the sweep brings it back); or wait (a provider line's earlier item or its
 * pacing slot is in the way) until a time worth trying again.
 */
export async function claimForRun(id: string, lineId: string, claimedBy: string, now = new Date()): Promise<RunClaim> {
  const line = await findLine(lineId);
  const serial = line !== null && SERIAL.includes(line.provider);
  const claimed = serial ? await claimHead(id, lineId, claimedBy, now) : await claimOne(id, claimedBy, now);
  // The policy step: a claimed item inside quiet hours or over a budget is held again.
  if (claimed && (await admit([claimed], now.getTime())).length) return { status: "claimed" };
  const rows = await sql<{ status: string; availableAt: Date }>(`SELECT status, "availableAt" FROM "OutboxItem" WHERE id = $1`, [id]);
  const row = rows[0];
  if (row?.status === "held") {
    // A run sleeps for a hold that ends soon; a later one is woken near its time by the chores (a month-long sleep per item costs the engine).
    const at = Math.max(new Date(row.availableAt).getTime(), now.getTime() + 1_000);
    return at - now.getTime() <= RUN_HOLD_WAIT_MS ? { status: "wait", until: new Date(at).toISOString() } : { status: "skip" };
  }
  if (!serial || row?.status !== "pending") return { status: "skip" };
  return { status: "wait", until: (await nextChanceAt(lineId, now)).toISOString() };
}

/** How long an engine run waits for a held item itself; past it, the chores wake the item nearer its time. */
const RUN_HOLD_WAIT_MS = 15 * 60_000;

/**
 * Items on provider lines that waited past the send window without the provider coming back
 * (a line that stays disconnected is never claimed from) fail, with the reason.
 */
export async function expireStranded(now = new Date()): Promise<number> {
  const windowMs = config().PROVIDER_SEND_WINDOW_SECONDS * 1000;
  const items = await sql<OutboxItem>(
    `UPDATE "OutboxItem" SET status = 'claimed', "claimedBy" = 'expiry', "leaseExpiresAt" = $3
     WHERE id IN (SELECT id FROM "OutboxItem" WHERE ((status = 'pending' AND COALESCE("releasedAt", "createdAt") < $1) OR (status = 'held' AND "availableAt" < $1))
                  AND "lineId" IN (SELECT id FROM "Line" WHERE platform = ANY($2::text[]) AND status = 'disconnected')
                  ORDER BY id LIMIT 100 FOR UPDATE SKIP LOCKED)
     RETURNING *`,
    [new Date(now.getTime() - windowMs), SERIAL, new Date(now.getTime() + LEASE_MS)],
  );
  for (const item of items) {
    const unsure = item.unknownSince ? "; the provider never confirmed whether an earlier attempt was sent" : "";
    await failClaimed(item, `the line's provider was unreachable for ${Math.round(windowMs / 60_000)} minutes${unsure}`);
  }
  return items.length;
}

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
// line (its oldest item pending or claimed) is the only one that may be claimed, and only once
// the line's pacing slot (Line.nextSendAt, 1 / sendRatePerSecond apart) is free. Both
// conditions are checked in the claiming statement itself, so instances never race.
//
// A held item is not in line while it waits: what comes after it goes first. Once due it is
// released (back to pending, releasedAt set: its send window starts) and takes its place by ID,
// so held items that come due together go oldest first, at the line's pace.
//
// Every statement here reads an index by a single status (a minimum, or a range of the
// (status, availableAt) index), never `status IN (...)` nor an OR across statuses: the planner
// cannot know that held rows are the ones due later (it multiplies the share of held rows by
// the share of rows due, nearly all of them), and such conditions became scans of every held
// row, each round, once 100,000 were scheduled. A row whose ID is known is read by its ID
// only: its status is checked as `(...) IS TRUE`, which no index can answer, so the planner
// never prefers a status index on statistics that say few rows are pending.

const SERIAL = serialProviderNames(PROVIDER_NAMES);

/** Whether lines of this provider send one item at a time, in order (the provider-line loop's). */
export const sendsSerially = (provider: string): boolean => SERIAL.includes(provider);

/** The head of line $1: its oldest item pending or claimed (a held one is not in line). */
const HEAD_ID = `LEAST((SELECT min(id) FROM "OutboxItem" WHERE "lineId" = $1 AND status = 'pending'),
                       (SELECT min(id) FROM "OutboxItem" WHERE "lineId" = $1 AND status = 'claimed'))`;

/** Margin of a claim's lease over the provider's own send timeout. */
const LEASE_MARGIN_MS = 60_000;

/** Held items released per statement (a burst due at once takes several). */
const RELEASE_BATCH = 1_000;

export interface LineHead {
  id: string;
  lineId: string;
}

/**
 * Held items on provider lines that are due go back to pending, to take their place in line
 * (oldest due first; `lineId` narrows to one line). Returns how many.
 */
export async function releaseDueHolds(now = new Date(), lineId?: string): Promise<number> {
  let total = 0;
  for (;;) {
    const rows = await sql(
      `UPDATE "OutboxItem" SET status = 'pending', "holdReason" = NULL, "releasedAt" = $1
       WHERE id IN (SELECT id FROM "OutboxItem" WHERE status = 'held' AND "availableAt" <= $1
                      AND "lineId" IN (SELECT id FROM "Line" WHERE platform = ANY($2::text[]))${lineId ? ` AND "lineId" = $4` : ""}
                    ORDER BY "availableAt", id LIMIT $3 FOR UPDATE SKIP LOCKED)
         AND status = 'held'
       RETURNING 1`,
      lineId ? [now, SERIAL, RELEASE_BATCH, lineId] : [now, SERIAL, RELEASE_BATCH],
    );
    total += rows.length;
    if (rows.length < RELEASE_BATCH) return total;
  }
}

/** Heads of provider lines that are due now, their line's pacing slot free and the line not disconnected. */
export async function dueLineHeads(now = new Date()): Promise<LineHead[]> {
  return sql<LineHead>(
    `SELECT o.id, l.id AS "lineId" FROM "Line" l
       CROSS JOIN LATERAL (SELECT id, status, "availableAt" FROM "OutboxItem" WHERE id = (SELECT ${HEAD_ID.replaceAll("$1", "l.id")})) o
     WHERE l.platform = ANY($1::text[]) AND l.status <> 'disconnected' AND (l."nextSendAt" IS NULL OR l."nextSendAt" <= $2)
       AND (o.status = 'pending' AND o."availableAt" <= $2) IS TRUE`,
    [SERIAL, now],
  );
}

/** Whether any provider line has an item in line (pending or claimed), or a held one now due. */
export async function serialBacklog(now = new Date()): Promise<boolean> {
  // Held items that are not due yet are no backlog: a month of scheduled sends costs no polling.
  const [row] = await sql<{ busy: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM "Line" l WHERE l.platform = ANY($1::text[])
                      AND (EXISTS (SELECT 1 FROM "OutboxItem" WHERE "lineId" = l.id AND status = 'pending')
                           OR EXISTS (SELECT 1 FROM "OutboxItem" WHERE "lineId" = l.id AND status = 'claimed')))
         OR EXISTS (SELECT 1 FROM (SELECT "lineId" FROM "OutboxItem" WHERE status = 'held' AND "availableAt" <= $2
                                   ORDER BY "availableAt" LIMIT 100) due
                    JOIN "Line" l ON l.id = due."lineId" WHERE l.platform = ANY($1::text[])) AS busy`,
    [SERIAL, now],
  );
  return row?.busy ?? false;
}

/** How long a claim on this line must last: past the provider's own send timeout. */
function leaseMsFor(line: Line | null): number {
  if (!line) return LEASE_MS;
  const provider = providerFor(line.provider);
  const timeout = provider.sendTimeoutMs?.(provider.load(line.providerSettings, null).settings) ?? LEASE_MS;
  return Math.max(LEASE_MS, timeout + LEASE_MARGIN_MS);
}

/** The interval between two sends of a line (ms), from its rate. */
function paceMs(line: Line | null): number {
  const rate = line && line.sendRatePerSecond > 0 ? line.sendRatePerSecond : 1;
  return Math.ceil(1000 / rate);
}

export interface HeadClaim {
  item: OutboxItem;
  /** When the line's next pacing slot frees (the claim took this one). */
  nextSlotAt: Date;
}

/**
 * Claims the head of line `lineId` (only if it is item `id`, when given) if it is pending and
 * due and the line's pacing slot is free, taking the slot. Null when any of that does not hold.
 */
export async function claimLineHead(lineId: string, claimedBy: string, id: string | null = null, now = new Date()): Promise<HeadClaim | null> {
  const line = await findLine(lineId);
  const nextSlot = new Date(now.getTime() + paceMs(line));
  const lease = new Date(now.getTime() + leaseMsFor(line));
  const rows = await sql<OutboxItem>(
    // Every row is found by its ID (o.id = a scalar subquery). Joined to a CTE, and with its status as a
    // condition the planner could use, it read every pending row of the table to find the head
    // (its statistics, taken when few were pending, call the status index the cheaper way):
    // each claim of a 10,000-item burst cost 20 ms.
    `WITH target AS (
       SELECT o.id FROM "OutboxItem" o
       WHERE o.id = (SELECT ${HEAD_ID}) AND ($6::text IS NULL OR o.id = $6) AND (o.status = 'pending' AND o."availableAt" <= $2) IS TRUE),
     slot AS (
       UPDATE "Line" SET "nextSendAt" = $3
       WHERE id = $1 AND status <> 'disconnected' AND ("nextSendAt" IS NULL OR "nextSendAt" <= $2)
         AND EXISTS (SELECT 1 FROM target)
       RETURNING id)
     UPDATE "OutboxItem" o SET status = 'claimed', "leaseExpiresAt" = $4, "claimedBy" = $5, attempts = attempts + 1, "attemptStartedAt" = $2
     WHERE o.id = (SELECT id FROM target) AND (o.status = 'pending') IS TRUE AND EXISTS (SELECT 1 FROM slot)
     RETURNING o.*`,
    [lineId, now, nextSlot, lease, claimedBy, id],
  );
  return rows[0] ? { item: rows[0], nextSlotAt: nextSlot } : null;
}

/** Claims item `id` if it is its line's head, due, and the line's pacing slot is free (an engine run's claim). */
async function claimHead(id: string, lineId: string, claimedBy: string, now = new Date()): Promise<OutboxItem | null> {
  return (await claimLineHead(lineId, claimedBy, id, now))?.item ?? null;
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
  if (serial) await releaseDueHolds(now, lineId); // the line's held items now due take their place first
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
    // From the disconnected lines (usually none), each status by its own index: an OR across
    // statuses over the whole table read every held row every five seconds.
    `WITH stranded AS (
       SELECT o.id FROM "Line" l CROSS JOIN LATERAL (
         (SELECT id FROM "OutboxItem" WHERE "lineId" = l.id AND status = 'pending' AND COALESCE("releasedAt", "createdAt") < $1 ORDER BY id LIMIT 100)
         UNION ALL
         (SELECT id FROM "OutboxItem" WHERE "lineId" = l.id AND status = 'held' AND "availableAt" < $1 ORDER BY id LIMIT 100)) o
       WHERE l.platform = ANY($2::text[]) AND l.status = 'disconnected')
     UPDATE "OutboxItem" SET status = 'claimed', "claimedBy" = 'expiry', "leaseExpiresAt" = $3
     WHERE id IN (SELECT id FROM "OutboxItem" WHERE id IN (SELECT id FROM stranded)
                    AND ((status = 'pending' AND COALESCE("releasedAt", "createdAt") < $1) OR (status = 'held' AND "availableAt" < $1))
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

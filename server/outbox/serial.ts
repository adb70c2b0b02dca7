import { sql } from "../db";
import type { Line, OutboxItem } from "../generated/prisma/client";
import { serialProviderNames } from "../platform/connection";
import { PROVIDER_NAMES, providerFor } from "../platform/registry";
import { findLine } from "../db/line-cache";
import { config } from "../kernel/config";
import { admit } from "./admit-claims";
import { paceMs } from "../policy/line-send-policy";
import { claimOne, failClaimed, LEASE_MS } from "./queue";

// Only a line's head, once its pacing slot is free, may be claimed: both are checked in the claiming
// statement, so instances never race. Each statement reads an index by one status, and a row whose
// ID is known by its ID alone (`(...) IS TRUE`): docs/architecture.md, "The outbox's statements".

const SERIAL = serialProviderNames(PROVIDER_NAMES);

export const sendsSerially = (provider: string): boolean => SERIAL.includes(provider);

/** A held item is not in line: what comes after it goes first, and it takes its place (by ID) once due. */
const HEAD_ID = `LEAST((SELECT min(id) FROM "OutboxItem" WHERE "lineId" = $1 AND status = 'pending'),
                       (SELECT min(id) FROM "OutboxItem" WHERE "lineId" = $1 AND status = 'claimed'))`;

const LEASE_MARGIN_MS = 60_000;

const RELEASE_BATCH = 1_000;

export interface LineHead {
  id: string;
  lineId: string;
}

/** Due held items on provider lines go back to pending (their send window starts), oldest first. */
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

export async function dueLineHeads(now = new Date()): Promise<LineHead[]> {
  return sql<LineHead>(
    `SELECT o.id, l.id AS "lineId" FROM "Line" l
       CROSS JOIN LATERAL (SELECT id, status, "availableAt" FROM "OutboxItem" WHERE id = (SELECT ${HEAD_ID.replaceAll("$1", "l.id")})) o
     WHERE l.platform = ANY($1::text[]) AND l.status <> 'disconnected' AND (l."nextSendAt" IS NULL OR l."nextSendAt" <= $2)
       AND (o.status = 'pending' AND o."availableAt" <= $2) IS TRUE`,
    [SERIAL, now],
  );
}

export async function serialBacklog(now = new Date()): Promise<boolean> {
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

function leaseMsFor(line: Line | null): number {
  if (!line) return LEASE_MS;
  const provider = providerFor(line.provider);
  const timeout = provider.sendTimeoutMs?.(provider.load(line.providerSettings, null).settings) ?? LEASE_MS;
  return Math.max(LEASE_MS, timeout + LEASE_MARGIN_MS);
}

export interface HeadClaim {
  item: OutboxItem;
  nextSlotAt: Date;
}

/** Takes the line's pacing slot with its head (only if it is item `id`, when given). */
export async function claimLineHead(lineId: string, claimedBy: string, id: string | null = null, now = new Date()): Promise<HeadClaim | null> {
  const line = await findLine(lineId);
  const nextSlot = new Date(now.getTime() + (line ? paceMs(line) : 1000));
  const lease = new Date(now.getTime() + leaseMsFor(line));
  const rows = await sql<OutboxItem>(
    // Every row by its ID (o.id = a scalar subquery): found through the status index, the head cost 20 ms per claim.
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

async function claimHead(id: string, lineId: string, claimedBy: string, now = new Date()): Promise<OutboxItem | null> {
  return (await claimLineHead(lineId, claimedBy, id, now))?.item ?? null;
}

async function nextChanceAt(lineId: string, now = new Date()): Promise<Date> {
  const line = await findLine(lineId);
  const slot = line?.nextSendAt && line.nextSendAt > now ? line.nextSendAt : null;
  return slot ?? new Date(now.getTime() + 1_000);
}

export type RunClaim = { status: "claimed" } | { status: "skip" } | { status: "wait"; until: string };

/** An Inngest run's claim: skip when handled or not due (an event or the sweep brings it back), or wait for its turn. */
export async function claimForRun(id: string, lineId: string, claimedBy: string, now = new Date()): Promise<RunClaim> {
  const line = await findLine(lineId);
  const serial = line !== null && SERIAL.includes(line.provider);
  if (serial) await releaseDueHolds(now, lineId);
  const claimed = serial ? await claimHead(id, lineId, claimedBy, now) : await claimOne(id, claimedBy, now);
  if (claimed && (await admit([claimed], now.getTime())).length) return { status: "claimed" };
  const rows = await sql<{ status: string; availableAt: Date }>(`SELECT status, "availableAt" FROM "OutboxItem" WHERE id = $1`, [id]);
  const row = rows[0];
  if (row?.status === "held") {
    // A month-long sleep per item costs the engine: a later hold is woken near its time by the chores.
    const at = Math.max(new Date(row.availableAt).getTime(), now.getTime() + 1_000);
    return at - now.getTime() <= RUN_HOLD_WAIT_MS ? { status: "wait", until: new Date(at).toISOString() } : { status: "skip" };
  }
  if (!serial || row?.status !== "pending") return { status: "skip" };
  return { status: "wait", until: (await nextChanceAt(lineId, now)).toISOString() };
}

const RUN_HOLD_WAIT_MS = 15 * 60_000;

/** A disconnected line is never claimed from: its items fail once they waited past the send window. */
export async function expireStranded(now = new Date()): Promise<number> {
  const windowMs = config().PROVIDER_SEND_WINDOW_SECONDS * 1000;
  const items = await sql<OutboxItem>(
    // From the disconnected lines (usually none), each status by its own index.
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

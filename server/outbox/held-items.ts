import { sql } from "../db";
import { findLine } from "../db/line-cache";
import type { OutboxItem } from "../generated/prisma/client";
import { unitOfWork } from "../write/unit";
import { failedEvent, outboxEvent } from "./queue";

// What people and policy changes do to held items. Approve, reject and cancel are each one
// conditional UPDATE, so of the three racing on one held send exactly one wins, on any instance
// (PostgreSQL re-reads a row a concurrent decision changed before it matches it).

const STILL_WAITING = `id = $1 AND status = 'held' AND "holdReason" = 'approval'`;

export async function approveHeld(id: string, by: string, now = new Date()): Promise<OutboxItem | null> {
  return unitOfWork(async (unit) => {
    const [item] = await unit.query<OutboxItem>(
      `UPDATE "OutboxItem" SET
         status = CASE WHEN "sendAt" > $2 THEN 'held' ELSE 'pending' END,
         "holdReason" = CASE WHEN "sendAt" > $2 THEN 'scheduled' ELSE NULL END,
         "availableAt" = GREATEST($2, COALESCE("sendAt", $2)),
         "releasedAt" = $2, "reviewedAt" = $2, "reviewedBy" = $3
       WHERE ${STILL_WAITING} RETURNING *`,
      [id, now, by],
    );
    if (item?.chatId) unit.live([outboxEvent(item, item.chatId, "pending")]);
    return item ?? null;
  });
}

export async function rejectHeld(held: Pick<OutboxItem, "id" | "lineId">, by: string, now = new Date()): Promise<OutboxItem | null> {
  const line = await findLine(held.lineId); // outside the transaction: PGlite has one connection
  return unitOfWork(async (unit) => {
    const [item] = await unit.query<OutboxItem>(
      `UPDATE "OutboxItem" SET status = 'failed', error = 'rejected', "holdReason" = NULL, "completedAt" = $2, "reviewedAt" = $2, "reviewedBy" = $3
       WHERE ${STILL_WAITING} RETURNING *`,
      [held.id, now, by],
    );
    if (!item) return null;
    if (item.chatId) unit.live([outboxEvent(item, item.chatId, "failed")]);
    if (item.kind === "message") await unit.fanOut([failedEvent(item, line, "rejected", now)]);
    return item;
  });
}

/** Null when it was no longer pending, or when the owner's approval released it to go now. */
export async function cancelPending(id: string, now = new Date()): Promise<OutboxItem | null> {
  return unitOfWork(async (unit) => {
    const rows = await unit.query<OutboxItem>(
      `UPDATE "OutboxItem" SET status = 'failed', error = 'canceled', "canceledAt" = $2, "completedAt" = $2, "holdReason" = NULL
       WHERE id = $1 AND (status = 'held' OR (status = 'pending' AND "reviewedAt" IS NULL)) RETURNING *`,
      [id, now],
    );
    const item = rows[0];
    // No message.failed webhook: the owner's own decision is no delivery failure.
    if (item?.chatId) unit.live([outboxEvent(item, item.chatId, "failed")]);
    return item ?? null;
  });
}

/** Null when it was no longer pending. A send waiting for approval keeps waiting: only its send_at moves. */
export async function schedulePending(id: string, at: Date): Promise<OutboxItem | null> {
  const rows = await sql<OutboxItem>(
    `UPDATE "OutboxItem" SET "sendAt" = $2,
       status = 'held',
       "holdReason" = CASE WHEN "holdReason" = 'approval' AND status = 'held' THEN 'approval' ELSE 'scheduled' END,
       "availableAt" = CASE WHEN "holdReason" = 'approval' AND status = 'held' THEN "availableAt" ELSE $2 END
     WHERE id = $1 AND status IN ('pending', 'held') RETURNING *`,
    [id, at],
  );
  return rows[0] ?? null;
}

/** Items held by the line's policy come due now, to be judged again by the new policy at their claim. */
export async function reconsiderHolds(lineId: string, now = new Date()): Promise<number> {
  const rows = await sql(
    `UPDATE "OutboxItem" SET "availableAt" = $2
     WHERE "lineId" = $1 AND status = 'held' AND "holdReason" IN ('quiet_hours', 'new_contact_budget') AND "availableAt" > $2 RETURNING 1`,
    [lineId, now],
  );
  return rows.length;
}

export async function heldDueSoon(withinMs: number, limit = 1_000, now = Date.now()): Promise<{ id: string; lineId: string }[]> {
  return sql<{ id: string; lineId: string }>(
    `SELECT id, "lineId" FROM "OutboxItem" WHERE status = 'held' AND "availableAt" <= $1 ORDER BY "availableAt", id LIMIT $2`,
    [new Date(now + withinMs), limit],
  );
}

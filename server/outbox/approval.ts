import { findLine } from "../db/line-cache";
import type { OutboxItem } from "../generated/prisma/client";
import { unitOfWork } from "../write/unit";
import { failedEvent, outboxEvent } from "./queue";

// Sends held for approval (a key with require_approval): held with hold_reason 'approval' and
// no due time, so no claim ever sees them, until the owner approves (the item goes, or waits
// for the send_at it asked for) or rejects (failed, error 'rejected'). Both change only an
// item still held for approval, and a cancel (holds.ts) no item approved to go now: of an
// approve, a reject and a cancel racing on one held send exactly one wins, on any instance,
// since each is one conditional UPDATE of the row.

const STILL_WAITING = `id = $1 AND status = 'held' AND "holdReason" = 'approval'`;

/** Approves a held send; null when it no longer waits for approval. */
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

/** Rejects a held send: it ends failed with error 'rejected' (message.failed tells the sender's webhooks). Null when it no longer waits. */
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

import { getDb } from "../db";
import type { OutboxItem } from "../generated/prisma/client";
import { log } from "../kernel/log";
import type { SendResult } from "../platform/types";
import { type BatchContext, loadContext, type Prepared, prepare, preparedOne } from "./prepare";
import { retryLater } from "./queue";
import { admit } from "./holds";
import { recordOutcomes } from "./record";
import { send } from "./send";

// Delivery of claimed items, prepare -> send -> record: a batch at a time for the embedded
// runner, or one step at a time for an engine that runs each item as its own durable function
// (Inngest), where claim, send and record are separate steps persisted between retries.

/** Sends a batch of claimed items through their lines' platforms and records the outcomes. */
export async function deliverBatch(claimed: OutboxItem[]): Promise<void> {
  if (!claimed.length) return;
  // The policy step: items inside quiet hours or over a new-contact budget are held again.
  const items = await admit(claimed);
  if (!items.length) return;
  let ctx: BatchContext;
  try {
    ctx = await loadContext(items);
  } catch (err) {
    log().error({ err, outbox_ids: items.map((i) => i.id) }, "loading an outbox batch failed");
    await Promise.all(items.map((item) => retryLater(item, "internal error while delivering").catch(() => undefined)));
    return;
  }
  const outcomes: { x: Prepared; result: SendResult }[] = [];
  await Promise.all(
    items.map(async (item) => {
      try {
        const x = prepare(item, ctx);
        outcomes.push({ x, result: await send(x) });
      } catch (err) {
        log().error({ err, outbox_id: item.id }, "delivering failed unexpectedly");
        await retryLater(item, "internal error while delivering").catch(() => undefined);
      }
    }),
  );
  try {
    await recordOutcomes(outcomes);
  } catch (err) {
    // The platform accepted these; the lease expires and a retried send returns the same GUID.
    log().error({ err, outbox_ids: outcomes.map(({ x }) => x.item.id) }, "recording an outbox batch failed");
    await Promise.all(outcomes.map(({ x }) => retryLater(x.item, "internal error while recording").catch(() => undefined)));
  }
}

/** Sends one claimed item and records the outcome. */
export const deliver = (item: OutboxItem): Promise<void> => deliverBatch([item]);

/** Sends a claimed item. Safe to repeat: the outbox ID is the platform's idempotency key. */
export async function sendOne(id: string): Promise<SendResult | null> {
  const x = await preparedOne(id);
  return x ? send(x) : null;
}

export interface ItemState {
  status: string;
  /** When a pending item is due again (ISO), after a transient failure. */
  availableAt: string | null;
}

/** Records what the platform did with a claimed item; returns where the item stands. */
export async function recordOne(id: string, result: SendResult): Promise<ItemState> {
  const x = await preparedOne(id);
  if (x) await recordOutcomes([{ x, result }]);
  const db = await getDb();
  const item = await db.outboxItem.findUniqueOrThrow({ where: { id }, select: { status: true, availableAt: true } });
  return { status: item.status, availableAt: item.status === "pending" ? item.availableAt.toISOString() : null };
}

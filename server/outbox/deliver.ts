import { getDb } from "../db";
import type { OutboxItem } from "../generated/prisma/client";
import { log } from "../kernel/log";
import type { SendResult } from "../platform/types";
import { type BatchContext, loadContext, type Prepared, prepare, preparedOne } from "./prepare";
import { retryLater } from "./queue";
import { admit } from "./admit-claims";
import { recordOutcomes } from "./record";
import { sendToProvider } from "./send-to-provider";

// prepare -> send -> record: a batch at a time for the embedded runner, or one durable step at a
// time for Inngest (claim, send and record persisted between retries).

export async function deliverBatch(claimed: OutboxItem[]): Promise<void> {
  if (!claimed.length) return;
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
        outcomes.push({ x, result: await sendToProvider(x) });
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

export const deliver = (item: OutboxItem): Promise<void> => deliverBatch([item]);

/** Safe to repeat: the outbox ID is the platform's idempotency key. */
export async function sendOne(id: string): Promise<SendResult | null> {
  const x = await preparedOne(id);
  return x ? sendToProvider(x) : null;
}

export interface ItemState {
  status: string;
  availableAt: string | null;
}

export async function recordOne(id: string, result: SendResult): Promise<ItemState> {
  const x = await preparedOne(id);
  if (x) await recordOutcomes([{ x, result }]);
  const db = await getDb();
  const item = await db.outboxItem.findUniqueOrThrow({ where: { id }, select: { status: true, availableAt: true } });
  return { status: item.status, availableAt: item.status === "pending" ? item.availableAt.toISOString() : null };
}

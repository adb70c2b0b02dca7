import { batcher } from "../batcher";
import { config } from "../config";
import { processSingleton } from "../singleton";
import { wakeRunner } from "./runner";
import { log } from "../observability/log";

// How a stored outbox item reaches its engine. Embedded: the runner in this process wakes at
// once. Inngest: an event per item (items stored in the same turn share one request). If
// Inngest cannot be reached the write still succeeds: the item is in the database, and the
// sweep sends its event again once Inngest answers.

export interface StoredItem {
  id: string;
  lineId: string;
  /** On a provider line that sends one item at a time (server/delivery/serial.ts). */
  serial: boolean;
}

const sendEvents = processSingleton("inngest-events", () =>
  batcher<StoredItem, void>(async (items) => {
    const [{ inngest }, { outboxItemCreated }] = await Promise.all([import("@/inngest/client"), import("@/inngest/events")]);
    try {
      await inngest.send(items.map((item) => outboxItemCreated.create({ id: item.id, line_id: item.lineId })));
    } catch (err) {
      console.error(`[outbox] could not send ${items.length} event(s) to Inngest; the sweep will send them again:`, (err as Error).message);
    }
    return items.map(() => undefined);
  }),
);

/** Called after an outbox item is committed. Never throws and never waits for Inngest. */
export function announce(item: StoredItem): void {
  if (config().deliveryEngine === "inngest") void sendEvents(item);
  else wakeRunner(item.serial);
}

const sendWebhooksDue = processSingleton("inngest-webhooks-due", () =>
  batcher<null, void>(async (calls) => {
    const [{ inngest }, { webhooksDue }] = await Promise.all([import("@/inngest/client"), import("@/inngest/events")]);
    try {
      await inngest.send(webhooksDue.create({}));
    } catch (err) {
      log().error({ err: (err as Error).message }, "could not notify Inngest; the minute schedule will send the deliveries:");
    }
    return calls.map(() => undefined);
  }),
);

/** After a change with webhook deliveries commits (Inngest engine): one event per turn. */
export function announceWebhooks(): void {
  void sendWebhooksDue(null);
}

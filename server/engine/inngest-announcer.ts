import { batcher } from "../kernel/batcher";
import { processSingleton } from "../kernel/singleton";
import { type StoredItem, subscribe } from "../kernel/signals";
import { log } from "../kernel/log";

// Under Inngest, how committed work reaches the functions: an event per stored outbox item
// (items stored in the same turn share one request) and one relay/webhooks.due per turn with
// new webhook deliveries. If Inngest cannot be reached the write still succeeds: the item is
// in the database, and the chores' sweep sends its event again once Inngest answers.

const sendEvents = processSingleton("inngest-events", () =>
  batcher<StoredItem, void>(async (items) => {
    const [{ inngest }, { outboxItemCreated }] = await Promise.all([import("@/inngest/client"), import("@/inngest/events")]);
    try {
      await inngest.send(items.map((item) => outboxItemCreated.create({ id: item.id, line_id: item.lineId })));
    } catch (err) {
      log().error({ err: (err as Error).message, items: items.length }, "could not send outbox events to Inngest; the sweep will send them again");
    }
    return items.map(() => undefined);
  }),
);

const sendWebhooksDue = processSingleton("inngest-webhooks-due", () =>
  batcher<null, void>(async (calls) => {
    const [{ inngest }, { webhooksDue }] = await Promise.all([import("@/inngest/client"), import("@/inngest/events")]);
    try {
      await inngest.send(webhooksDue.create({}));
    } catch (err) {
      log().error({ err: (err as Error).message }, "could not notify Inngest; the minute schedule will send the deliveries");
    }
    return calls.map(() => undefined);
  }),
);

const state = processSingleton("inngest-announcer", () => ({ off: [] as (() => void)[] }));

/** Subscribes to the signals that start Inngest functions (never waits for Inngest). */
export function startAnnouncer(): void {
  if (state.off.length) return;
  state.off = [subscribe("outbox.stored", (item) => void sendEvents(item)), subscribe("webhooks.due", () => void sendWebhooksDue(null))];
}

export function stopAnnouncer(): void {
  for (const off of state.off) off();
  state.off = [];
}

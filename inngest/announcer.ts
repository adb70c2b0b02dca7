import { batcher } from "@/server/kernel/batcher";
import { processSingleton } from "@/server/kernel/singleton";
import { type StoredItem, subscribe } from "@/server/kernel/signals";
import { log } from "@/server/kernel/log";
import type { Announcer } from "@/server/engine";

// Under Inngest, how committed work reaches the functions: an event per stored outbox item
// (items stored in the same turn share one request) and one relay/webhooks.due per turn with
// new webhook deliveries. If Inngest cannot be reached the write still succeeds: the item is
// in the database, and the chores' sweep sends its event again once Inngest answers.
// The SDK is loaded on first use, so the embedded engine never loads it.

const sendEvents = processSingleton("inngest-events", () =>
  batcher<StoredItem, void>(async (items) => {
    const [{ inngest }, { outboxItemCreated }] = await Promise.all([import("./inngest-client"), import("./inngest-events")]);
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
    const [{ inngest }, { webhooksDue }] = await Promise.all([import("./inngest-client"), import("./inngest-events")]);
    try {
      await inngest.send(webhooksDue.create({}));
    } catch (err) {
      log().error({ err: (err as Error).message }, "could not notify Inngest; the minute schedule will send the deliveries");
    }
    return calls.map(() => undefined);
  }),
);

const state = processSingleton("inngest-announcer", () => ({ off: [] as (() => void)[] }));

/** Handed to startEngine at boot: subscribes to the signals that start Inngest functions (never waits for Inngest). */
export const inngestAnnouncer: Announcer = {
  start() {
    if (state.off.length) return;
    state.off = [subscribe("outbox.stored", (item) => void sendEvents(item)), subscribe("webhooks.due", () => void sendWebhooksDue(null))];
  },
  stop() {
    for (const off of state.off) off();
    state.off = [];
  },
};

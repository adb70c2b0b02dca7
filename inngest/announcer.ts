import { batcher } from "@/server/kernel/batcher";
import { processSingleton } from "@/server/kernel/singleton";
import { type StoredItem, subscribe } from "@/server/kernel/signals";
import { log } from "@/server/kernel/log";
import type { Announcer } from "@/server/engine";

// If Inngest cannot be reached the write still succeeds: the sweep sends the event again later.
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

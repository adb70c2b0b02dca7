import { cron, type Inngest } from "inngest";
import { claimDeliveries, deliverWebhooks, nextDeliveryDueAt } from "@/server/webhooks/delivery";
import { inngest } from "../inngest-client";
import { webhooksDue } from "../inngest-events";

// A retry due before the next minute (the schedule's first, 5 s) is not left to the cron: the run
// sleeps until it is due and announces it, so retries keep their published timing here too.

const BATCH = 100;
const MAX_ROUNDS = 50;
const CRON_INTERVAL_MS = 60_000;

export function createDeliverWebhooks(client: Inngest.Any) {
  return client.createFunction(
    {
      id: "deliver-webhooks",
      name: "Send due webhook deliveries",
      triggers: [webhooksDue, cron("* * * * *")],
      // Claims skip locked rows, so two runs share a backlog; a sleeping run holds no slot.
      concurrency: [{ limit: 2 }],
      retries: 4,
    },
    async ({ step }) => {
      let sent = 0;
      let backlog = false;
      for (let round = 1; round <= MAX_ROUNDS; round++) {
        const n = await step.run(`deliver-${round}`, async () => {
          const due = await claimDeliveries(BATCH);
          await deliverWebhooks(due);
          return due.length;
        });
        sent += n;
        backlog = n === BATCH;
        if (!backlog) break;
      }
      if (backlog) {
        await step.sendEvent("continue-backlog", webhooksDue.create({}));
        return { sent, continued: true };
      }
      // Decided inside a step, so a replay of this run takes the same path.
      const retryAt = await step.run("next-retry", async () => {
        const next = await nextDeliveryDueAt();
        if (!next) return null;
        const at = Math.max(next.getTime(), Date.now() + 1_000);
        return at - Date.now() < CRON_INTERVAL_MS ? at : null;
      });
      if (retryAt !== null) {
        await step.sleepUntil("wait-for-retry", new Date(retryAt));
        // Every run that waited for the same moment sends the same event ID: Inngest keeps one.
        await step.sendEvent("retry-due", webhooksDue.create({}, { id: `webhooks-due-${retryAt}` }));
      }
      return { sent, retryAt };
    },
  );
}

export const deliverWebhooksFn = createDeliverWebhooks(inngest);

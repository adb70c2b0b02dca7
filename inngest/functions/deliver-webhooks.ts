import { cron, type Inngest } from "inngest";
import { claimDeliveries, deliverWebhooks, releaseExpiredDeliveries } from "@/server/webhooks/delivery";
import { inngest } from "../client";
import { webhooksDue } from "../events";

// Sends due webhook deliveries with the embedded sender's steps (claim with a lease, signed
// POST, attempt log, retry schedule kept on the delivery rows). Runs when a change with
// deliveries commits (relay/webhooks.due) and every minute for scheduled retries, so in this
// engine a retry is sent within a minute of its due time.

const BATCH = 100;
/** Batches per run; a longer backlog continues in the next run. */
const MAX_ROUNDS = 50;

export function createDeliverWebhooks(client: Inngest.Any) {
  return client.createFunction(
    {
      id: "deliver-webhooks",
      name: "Send due webhook deliveries",
      triggers: [webhooksDue, cron("* * * * *")],
      // Claims skip locked rows, so two runs share a backlog without sending anything twice.
      concurrency: [{ limit: 2 }],
      retries: 4,
    },
    async ({ step }) => {
      const released = await step.run("release-expired-leases", () => releaseExpiredDeliveries());
      let sent = 0;
      for (let round = 1; round <= MAX_ROUNDS; round++) {
        const n = await step.run(`deliver-${round}`, async () => {
          const due = await claimDeliveries(BATCH);
          await deliverWebhooks(due);
          return due.length;
        });
        sent += n;
        if (n < BATCH) break;
      }
      return { released, sent };
    },
  );
}

export const deliverWebhooksFn = createDeliverWebhooks(inngest);

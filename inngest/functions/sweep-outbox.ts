import { cron, type Inngest } from "inngest";
import { overduePending, releaseExpiredLeases } from "@/server/delivery/outbox";
import { inngest } from "../client";
import { outboxItemCreated } from "../events";

// Every minute: claims whose lease expired (a step that never finished) go back to pending,
// and pending items that have been due for a while (their event was lost: Inngest was
// unreachable when the write landed, or the run ended early) get a new event. Duplicate
// events are harmless: only one run can claim an item.

/** Due for this long without being claimed means no run is coming for it. */
export const OVERDUE_MS = 60_000;
export const SWEEP_BATCH = 1_000;

export function createSweepOutbox(client: Inngest.Any) {
  return client.createFunction(
    {
      id: "sweep-outbox",
      name: "Return expired claims and re-send lost events",
      triggers: [cron("* * * * *")],
      concurrency: [{ limit: 1 }],
      retries: 1,
    },
    async ({ step }) => {
      const released = await step.run("release-expired-leases", () => releaseExpiredLeases());
      const overdue = await step.run("find-overdue", () => overduePending(OVERDUE_MS, SWEEP_BATCH));
      if (overdue.length) {
        await step.sendEvent(
          "redeliver",
          overdue.map((item) => outboxItemCreated.create({ id: item.id, line_id: item.lineId })),
        );
      }
      return { released, redelivered: overdue.map((item) => item.id) };
    },
  );
}

export const sweepOutbox = createSweepOutbox(inngest);

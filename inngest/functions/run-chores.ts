import { cron, type Inngest } from "inngest";
import { overduePending } from "@/server/outbox/queue";
import { heldDueSoon } from "@/server/outbox/held-items";
import { CHORES } from "@/server/engine/chores";
import { inngest } from "../inngest-client";
import { outboxItemCreated } from "../inngest-events";

// Pending items due for a while lost their event (Inngest was unreachable, or a run ended early)
// and get a new one. Duplicate events are harmless: only one run can claim an item.

export const OVERDUE_MS = 60_000;
const SWEEP_BATCH = 1_000;
const HELD_LOOKAHEAD_MS = 120_000;

export function createRunChores(client: Inngest.Any) {
  return client.createFunction(
    {
      id: "run-chores",
      name: "Periodic chores: expired claims, stranded sends, line probes, lost events",
      triggers: [cron("* * * * *")],
      concurrency: [{ limit: 1 }],
      retries: 1,
    },
    async ({ step }) => {
      const done: Record<string, number> = {};
      for (const chore of CHORES) done[chore.id] = await step.run(chore.id, () => chore.run({ background: false }));
      const overdue = await step.run("find-overdue", () => overduePending(OVERDUE_MS, SWEEP_BATCH));
      if (overdue.length) {
        await step.sendEvent(
          "redeliver",
          overdue.map((item) => outboxItemCreated.create({ id: item.id, line_id: item.lineId })),
        );
      }
      // Held items (scheduled sends, quiet hours, budgets) due before the next sweep: a run each,
      // which sleeps until the item's time. Runs for items held longer were not kept waiting.
      const waking = await step.run("find-held-due-soon", () => heldDueSoon(HELD_LOOKAHEAD_MS, SWEEP_BATCH));
      if (waking.length) {
        await step.sendEvent(
          "wake-held",
          waking.map((item) => outboxItemCreated.create({ id: item.id, line_id: item.lineId })),
        );
      }
      return { chores: done, redelivered: overdue.map((item) => item.id), woken: waking.map((item) => item.id) };
    },
  );
}

export const runChores = createRunChores(inngest);

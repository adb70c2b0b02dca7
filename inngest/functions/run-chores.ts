import { cron, type Inngest } from "inngest";
import { overduePending } from "@/server/outbox/queue";
import { heldDueSoon } from "@/server/outbox/holds";
import { CHORES } from "@/server/engine/chores";
import { inngest } from "../inngest-client";
import { outboxItemCreated } from "../inngest-events";

// Every minute: the periodic chores (server/engine/chores.ts, the list the embedded engine
// runs too), one step each: expired claims back to pending, stranded sends failed, provider
// lines probed and caught up, old records forgotten. Then what only this engine needs: pending
// items due for a while (their event was lost: Inngest was unreachable when the write landed,
// or the run ended early) get a new event. Duplicate events are harmless: only one run can
// claim an item.

/** Due for this long without being claimed means no run is coming for it. */
export const OVERDUE_MS = 60_000;
const SWEEP_BATCH = 1_000;
/** The sweep runs every minute: held items due within the next two are woken (a run waits at most RUN_HOLD_WAIT_MS for one). */
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

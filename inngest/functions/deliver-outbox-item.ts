import type { Inngest } from "inngest";
import { recordOne, sendOne } from "@/server/outbox/deliver";
import { claimForRun } from "@/server/outbox/serial";
import { inngest } from "../inngest-client";
import { outboxItemCreated } from "../inngest-events";

// The outbox ID is the platform's idempotency key, so a retried step never sends twice.

const PER_LINE_CONCURRENCY = 1;
const MAX_ROUNDS = 50;

export type DeliverResult = { id: string; status: string; rounds: number };

export function createDeliverOutboxItem(client: Inngest.Any) {
  return client.createFunction(
    {
      id: "deliver-outbox-item",
      name: "Deliver an outbox item",
      triggers: [outboxItemCreated],
      concurrency: [{ key: "event.data.line_id", limit: PER_LINE_CONCURRENCY }],
      // For a step that threw (database unreachable, a bug); platform errors are values the loop handles.
      retries: 4,
    },
    async ({ event, step, runId }): Promise<DeliverResult> => {
      const { id, line_id: lineId } = event.data;
      for (let round = 1; round <= MAX_ROUNDS; round++) {
        const claim = await step.run(`claim-${round}`, () => claimForRun(id, lineId, `inngest:${runId}`));
        if (claim.status === "skip") return { id, status: "skipped", rounds: round };
        if (claim.status === "wait") {
          await step.sleepUntil(`wait-${round}`, claim.until);
          continue;
        }
        const result = await step.run(`send-${round}`, () => sendOne(id));
        if (!result) return { id, status: "skipped", rounds: round };
        const state = await step.run(`record-${round}`, () => recordOne(id, result));
        if (state.status !== "pending" || !state.availableAt) return { id, status: state.status, rounds: round };
        await step.sleepUntil(`backoff-${round}`, state.availableAt);
      }
      return { id, status: "pending", rounds: MAX_ROUNDS };
    },
  );
}

export const deliverOutboxItem = createDeliverOutboxItem(inngest);

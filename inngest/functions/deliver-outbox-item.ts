import type { Inngest } from "inngest";
import { recordOne, sendOne } from "@/server/outbox/deliver";
import { claimForRun } from "@/server/outbox/serial";
import { inngest } from "../inngest-client";
import { outboxItemCreated } from "../inngest-events";

// Delivers one outbox item with the same steps as the embedded runner: claim (with a lease;
// on a provider line only its oldest item, paced),
// send through the line's platform (the outbox ID is its idempotency key, so a retried step
// never sends twice), record the outcome. A transient platform error leaves the item pending
// with a later available_at; the function sleeps until then and tries again, until the item
// is sent or failed (attempts run out in the record step).

/** Real lines send one message at a time, and a conversation's order matters. */
const PER_LINE_CONCURRENCY = 1;
/** A bound on the loop; the item's own max_attempts ends it long before. */
const MAX_ROUNDS = 50;

export type DeliverResult = { id: string; status: string; rounds: number };

export function createDeliverOutboxItem(client: Inngest.Any) {
  return client.createFunction(
    {
      id: "deliver-outbox-item",
      name: "Deliver an outbox item",
      triggers: [outboxItemCreated],
      concurrency: [{ key: "event.data.line_id", limit: PER_LINE_CONCURRENCY }],
      // Retries of a step that threw (database unreachable, a bug); platform errors are
      // values handled by the loop below.
      retries: 4,
    },
    async ({ event, step, runId }): Promise<DeliverResult> => {
      const { id, line_id: lineId } = event.data;
      for (let round = 1; round <= MAX_ROUNDS; round++) {
        const claim = await step.run(`claim-${round}`, () => claimForRun(id, lineId, `inngest:${runId}`));
        if (claim.status === "skip") return { id, status: "skipped", rounds: round };
        if (claim.status === "wait") {
          // A provider line sends in order, paced: an earlier item or the pacing slot is in the way.
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

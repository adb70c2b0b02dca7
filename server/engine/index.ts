import { config } from "../kernel/config";
import { subscribe } from "../kernel/signals";
import { log } from "../kernel/log";
import { catchUpAll, catchUpLine } from "../services/lines/line-monitor";
import { processSingleton } from "../kernel/singleton";
import { startChores, stopChores } from "./chores";
import { startAnnouncer, stopAnnouncer } from "./inngest-announcer";
import { startRunner, stopRunner } from "./outbox-runner";
import { claimedDeliveries, startWebhookRunner, stopWebhookRunner } from "./webhook-runner";

// The one place that knows which engine drives delivery. Embedded (the default): the outbox
// runner, the webhook sender, the chores and the line monitor run in this process. Inngest:
// this process only announces committed work (inngest/functions run the same steps), and
// catches up its provider lines once on start.

const state = processSingleton("engine", () => ({ offRecovered: null as (() => void) | null }));

export async function startEngine(): Promise<void> {
  const onStart = () => catchUpAll().catch((err: unknown) => log().error({ err }, "catch-up on start failed"));
  if (config().deliveryEngine === "inngest") {
    startAnnouncer();
    void onStart();
    return;
  }
  await startRunner();
  startWebhookRunner();
  startChores();
  // A line back from disconnected is caught up at once (the probe chore finds it so).
  state.offRecovered ??= subscribe("line.recovered", ({ lineId }) => void catchUpLine(lineId));
  void onStart();
}

/** Stops claiming, then waits (at most graceMs) for the sends and webhook attempts under way. */
export async function stopEngine(graceMs: number): Promise<void> {
  state.offRecovered?.();
  state.offRecovered = null;
  stopAnnouncer();
  await Promise.all([stopRunner(graceMs), stopWebhookRunner(graceMs), stopChores()]);
}

/** Webhook deliveries this process claimed and has not recorded (returned to the queue on shutdown). */
export { claimedDeliveries };

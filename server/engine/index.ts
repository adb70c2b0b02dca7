import { config } from "../kernel/config";
import { subscribe } from "../kernel/signals";
import { log } from "../kernel/log";
import { catchUpAll, catchUpLine } from "../services/lines/line-monitor";
import { processSingleton } from "../kernel/singleton";
import { startChores, stopChores } from "./chores";
import { startRunner, stopRunner } from "./outbox-runner";
import { claimedDeliveries, startWebhookRunner, stopWebhookRunner } from "./webhook-runner";

// The one place that knows which engine drives delivery (docs/architecture.md, "The engine").

/** inngest/announcer.ts, handed in at boot: engine/ imports nothing of inngest/. */
export interface Announcer {
  start(): void;
  stop(): void;
}

const state = processSingleton("engine", () => ({ offRecovered: null as (() => void) | null, announcer: null as Announcer | null }));

export async function startEngine(options: { announcer: Announcer }): Promise<void> {
  const onStart = () => catchUpAll().catch((err: unknown) => log().error({ err }, "catch-up on start failed"));
  if (config().deliveryEngine === "inngest") {
    state.announcer = options.announcer;
    options.announcer.start();
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

export async function stopEngine(graceMs: number): Promise<void> {
  state.offRecovered?.();
  state.offRecovered = null;
  state.announcer?.stop();
  state.announcer = null;
  await Promise.all([stopRunner(graceMs), stopWebhookRunner(graceMs), stopChores()]);
}

export { claimedDeliveries };

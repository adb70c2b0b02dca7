import { config } from "../config";
import { announceWebhooks } from "../delivery/engine";
import { wait } from "../delivery/runner";
import { processSingleton } from "../singleton";
import { claimDeliveries, deliverWebhooks, nextDeliveryDueAt, releaseExpiredDeliveries } from "./delivery";

// The embedded webhook sender (with the embedded engine; under Inngest the deliver-webhooks
// function runs the same steps): wakes when a change with deliveries commits, sleeps until the next retry is due otherwise.
// Claims use FOR UPDATE SKIP LOCKED, so several instances share the work.

const BATCH = 100;
const IDLE_POLL_MS = 1_000;
const SWEEP_EVERY_MS = 5_000;

const state = processSingleton("webhook-runner", () => ({
  running: false,
  woken: false,
  waiter: null as (() => void) | null,
  loop: null as Promise<void> | null,
}));

/** Called after a transaction that may have written deliveries commits. */
export function wakeWebhooks(): void {
  if (config().deliveryEngine === "inngest") {
    announceWebhooks();
    return;
  }
  state.woken = true;
  state.waiter?.();
}

const sleep = (ms: number) =>
  wait(
    ms,
    (w) => (state.waiter = w),
    () => (state.waiter = null),
  );

async function loop(): Promise<void> {
  let lastSweep = 0;
  while (state.running) {
    try {
      if (Date.now() - lastSweep > SWEEP_EVERY_MS) {
        lastSweep = Date.now();
        await releaseExpiredDeliveries();
      }
      state.woken = false;
      const due = await claimDeliveries(BATCH);
      if (due.length) {
        await deliverWebhooks(due);
        continue;
      }
      if (state.woken) continue;
      const next = await nextDeliveryDueAt();
      if (state.woken || !state.running) continue;
      await sleep(next ? Math.max(0, Math.min(IDLE_POLL_MS, next.getTime() - Date.now())) : IDLE_POLL_MS);
    } catch (err) {
      console.error("[webhooks] runner error", err);
      await sleep(IDLE_POLL_MS);
    }
  }
}

export function startWebhookRunner(): void {
  if (state.running) return;
  state.running = true;
  state.loop = loop();
}

export async function stopWebhookRunner(): Promise<void> {
  state.running = false;
  state.waiter?.();
  await state.loop;
  state.loop = null;
}

import { config } from "../config";
import { announceWebhooks } from "../delivery/engine";
import { wait } from "../delivery/runner";
import { deleteExpiredIdempotencyRecords } from "../http/idempotency";
import { deleteStaleListenSessions } from "../services/listen";
import { processSingleton } from "../singleton";
import { claimDeliveries, deliverWebhooks, nextDeliveryDueAt, releaseExpiredDeliveries } from "./delivery";
import { log } from "../observability/log";

// The embedded webhook sender (with the embedded engine; under Inngest the deliver-webhooks
// function runs the same steps): wakes when a change with deliveries commits, sleeps until the next retry is due otherwise.
// Claims use FOR UPDATE SKIP LOCKED, so several instances share the work.

const BATCH = 100;
/**
 * Deliveries in flight at once (POSTed or being recorded). Claims continue while a batch's
 * slowest receiver is still answering, so one slow webhook (itself capped at
 * MAX_IN_FLIGHT_PER_WEBHOOK) does not hold back the rest.
 */
const MAX_IN_FLIGHT = 400;
const IDLE_POLL_MS = 1_000;
/**
 * Pause while every due delivery's webhook is at its in-flight limit: short while slots keep
 * freeing (a fast receiver with a backlog), doubling up to the maximum while none do (a
 * stalled receiver), so a stall does not keep the database busy.
 */
const CAPPED_WAIT_MS = { min: 2, max: 200 };
const SWEEP_EVERY_MS = 5_000;

const state = processSingleton("webhook-runner", () => ({
  running: false,
  /** When the loop last went round (readiness: the sender is alive). */
  beatAt: 0,
  /** Deliveries claimed by this process and not yet recorded (returned at once on shutdown). */
  claimed: new Set<string>(),
  woken: false,
  inFlight: 0,
  cappedWait: CAPPED_WAIT_MS.min,
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

function settled(delivery: { id: string }): void {
  state.claimed.delete(delivery.id);
  state.inFlight--;
  // Wake the loop once there is room for a full batch again (not on every delivery).
  if (state.inFlight === MAX_IN_FLIGHT - BATCH) state.waiter?.();
}

async function loop(): Promise<void> {
  let lastSweep = 0;
  while (state.running) {
    state.beatAt = Date.now();
    try {
      if (Date.now() - lastSweep > SWEEP_EVERY_MS) {
        lastSweep = Date.now();
        await releaseExpiredDeliveries();
        await deleteStaleListenSessions();
        await deleteExpiredIdempotencyRecords();
      }
      if (state.inFlight > MAX_IN_FLIGHT - BATCH) {
        await sleep(IDLE_POLL_MS);
        continue;
      }
      state.woken = false;
      const due = await claimDeliveries(BATCH);
      if (due.length) {
        state.cappedWait = CAPPED_WAIT_MS.min;
        state.inFlight += due.length;
        for (const d of due) state.claimed.add(d.id);
        deliverWebhooks(due, settled).catch((err: unknown) => log().error({ err }, "delivery round failed"));
        if (due.length === BATCH) continue;
      }
      if (state.woken) continue;
      const next = await nextDeliveryDueAt();
      if (state.woken || !state.running) continue;
      const untilDue = next ? next.getTime() - Date.now() : IDLE_POLL_MS;
      // Due but not claimed: their webhooks are at their in-flight limit. Let slots free up.
      if (untilDue <= 0) {
        await sleep(state.cappedWait);
        if (!due.length) state.cappedWait = Math.min(state.cappedWait * 2, CAPPED_WAIT_MS.max);
      } else {
        await sleep(Math.min(IDLE_POLL_MS, untilDue));
      }
    } catch (err) {
      log().error({ err }, "runner error");
      await sleep(IDLE_POLL_MS);
    }
  }
}

export function startWebhookRunner(): void {
  if (state.running) return;
  state.running = true;
  state.loop = loop();
}

/** Whether the webhook sender is running, and when its loop last went round. */
export function webhookRunnerHealth(): { running: boolean; beatAt: number } {
  return { running: state.running, beatAt: state.beatAt };
}

/** Deliveries this process claimed and has not recorded yet. */
export function claimedDeliveries(): string[] {
  return [...state.claimed];
}

/** Stops claiming and waits (at most `graceMs`) for deliveries in flight to be recorded. */
export async function stopWebhookRunner(graceMs = 20_000): Promise<void> {
  state.running = false;
  state.waiter?.();
  await state.loop;
  state.loop = null;
  const deadline = Date.now() + graceMs;
  while (state.inFlight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
}

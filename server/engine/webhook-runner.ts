import { processSingleton } from "../kernel/singleton";
import { claimDeliveries, deliverWebhooks, nextDeliveryDueAt, releaseDeliveries } from "../webhooks/delivery";
import { type HandedDelivery, setLocalSender } from "../webhooks/handoff";
import { MAX_IN_FLIGHT_PER_WEBHOOK } from "../webhooks/http-post";
import { subscribe } from "../kernel/signals";
import { log } from "../kernel/log";
import { runLoop, Sleeper, withinGrace } from "./loop";

const BATCH = 100;
/** Claims go on while a batch's slowest receiver still answers, so one slow webhook does not hold back the rest. */
const MAX_IN_FLIGHT = 400;
const IDLE_POLL_MS = 1_000;
/** While every due delivery's webhook is at its limit: doubling while no slot frees, so a stalled receiver does not keep the database busy. */
const CAPPED_WAIT_MS = { min: 2, max: 200 };
const STOP_GRACE_MS = 20_000;

const state = processSingleton("webhook-runner", () => ({
  running: false,
  claimed: new Set<string>(),
  woken: false,
  inFlight: 0,
  /** Claimed, handed over or reserved, per webhook: the handoff keeps each under MAX_IN_FLIGHT_PER_WEBHOOK. */
  perWebhook: new Map<string, number>(),
  idle: null as (() => void) | null,
  cappedWait: CAPPED_WAIT_MS.min,
  sleeper: new Sleeper(),
  loop: null as Promise<void> | null,
  unsubscribe: null as (() => void) | null,
}));

function onDue(): void {
  state.woken = true;
  state.sleeper.wake();
}

function holding(webhookId: string, change: number): void {
  const n = (state.perWebhook.get(webhookId) ?? 0) + change;
  if (n > 0) state.perWebhook.set(webhookId, n);
  else state.perWebhook.delete(webhookId);
}

function settled(delivery: { id: string; webhookId: string }): void {
  state.claimed.delete(delivery.id);
  holding(delivery.webhookId, -1);
  state.inFlight--;
  if (state.inFlight === 0) state.idle?.();
  // Wake the loop once there is room for a full batch again (not on every delivery).
  if (state.inFlight === MAX_IN_FLIGHT - BATCH) state.sleeper.wake();
}

async function round(): Promise<void> {
  if (state.inFlight > MAX_IN_FLIGHT - BATCH) {
    await state.sleeper.sleep(IDLE_POLL_MS);
    return;
  }
  state.woken = false;
  const due = await claimDeliveries(BATCH);
  if (due.length) {
    state.cappedWait = CAPPED_WAIT_MS.min;
    state.inFlight += due.length;
    for (const d of due) {
      state.claimed.add(d.id);
      holding(d.webhookId, 1);
    }
    deliverWebhooks(due, settled).catch((err: unknown) => log().error({ err }, "delivery round failed"));
    if (due.length === BATCH) return;
  }
  if (state.woken) return;
  const next = await nextDeliveryDueAt();
  if (state.woken || !state.running) return;
  const untilDue = next ? next.getTime() - Date.now() : IDLE_POLL_MS;
  // Due but not claimed: their webhooks are at their in-flight limit.
  if (untilDue <= 0) {
    await state.sleeper.sleep(state.cappedWait);
    if (!due.length) state.cappedWait = Math.min(state.cappedWait * 2, CAPPED_WAIT_MS.max);
  } else {
    await state.sleeper.sleep(Math.min(IDLE_POLL_MS, untilDue));
  }
}

/** Slots for the deliveries this process's own transactions write (webhooks/handoff.ts), within the same limits as claims. */
const localSender = {
  reserve(webhookId: string): boolean {
    if (!state.running || state.inFlight >= MAX_IN_FLIGHT || (state.perWebhook.get(webhookId) ?? 0) >= MAX_IN_FLIGHT_PER_WEBHOOK) return false;
    state.inFlight++;
    holding(webhookId, 1);
    return true;
  },
  unreserve(deliveries: readonly { webhookId: string }[]): void {
    for (const d of deliveries) settled({ id: "", webhookId: d.webhookId });
  },
  take(deliveries: HandedDelivery[]): void {
    if (!state.running) {
      // Stopped since the reservation: back to pending, for whichever sender runs next.
      releaseDeliveries(deliveries.map((d) => d.id))
        .catch((err: unknown) => log().error({ err }, "handed deliveries could not be released; their leases run out"))
        .finally(() => localSender.unreserve(deliveries));
      return;
    }
    for (const d of deliveries) state.claimed.add(d.id);
    deliverWebhooks(deliveries, settled).catch((err: unknown) => log().error({ err }, "delivery round failed"));
  },
};

export function startWebhookRunner(): void {
  if (state.running) return;
  state.running = true;
  setLocalSender(localSender);
  state.unsubscribe = subscribe("webhooks.due", onDue);
  state.loop = runLoop({ heartbeat: "webhook_sender", label: "webhook runner", running: () => state.running, round, sleeper: state.sleeper });
}

export function claimedDeliveries(): string[] {
  return [...state.claimed];
}

export async function stopWebhookRunner(graceMs = STOP_GRACE_MS): Promise<void> {
  state.running = false;
  setLocalSender(null);
  state.unsubscribe?.();
  state.unsubscribe = null;
  state.sleeper.wake();
  await state.loop;
  state.loop = null;
  if (state.inFlight > 0) await withinGrace(new Promise<void>((resolve) => (state.idle = resolve)), graceMs);
  state.idle = null;
}

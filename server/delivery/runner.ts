import { processSingleton } from "../singleton";
import { claimDue, deliver, nextDueAt, releaseExpiredLeases } from "./outbox";

// The embedded delivery engine (the default; no extra process). It claims due outbox items
// and delivers them, wakes at once when a write lands (wakeRunner), sleeps until the next
// retry is due otherwise, and regularly returns expired leases to pending.

const BATCH = 25;
const IDLE_POLL_MS = 1_000;
const SWEEP_EVERY_MS = 5_000;

interface RunnerState {
  running: boolean;
  wake: (() => void) | null;
  woken: boolean;
  loop: Promise<void> | null;
}

const state = processSingleton<RunnerState>("embedded-runner", () => ({ running: false, wake: null, woken: false, loop: null }));

export function wakeRunner(): void {
  state.woken = true;
  state.wake?.();
}

async function sleep(ms: number): Promise<void> {
  if (state.woken) return;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      state.wake = null;
      resolve();
    }
    state.wake = done;
  });
}

async function loop(): Promise<void> {
  let lastSweep = 0;
  while (state.running) {
    try {
      if (Date.now() - lastSweep > SWEEP_EVERY_MS) {
        lastSweep = Date.now();
        await releaseExpiredLeases();
      }
      state.woken = false;
      const items = await claimDue(BATCH);
      if (items.length) {
        await Promise.all(items.map((item) => deliver(item)));
        continue;
      }
      const next = await nextDueAt();
      const wait = next ? Math.max(0, Math.min(IDLE_POLL_MS, next.getTime() - Date.now())) : IDLE_POLL_MS;
      await sleep(wait);
    } catch (err) {
      console.error("[outbox] runner error", err);
      await sleep(IDLE_POLL_MS);
    }
  }
}

export function startRunner(): void {
  if (state.running) return;
  state.running = true;
  state.loop = loop();
}

export async function stopRunner(): Promise<void> {
  state.running = false;
  state.wake?.();
  await state.loop;
  state.loop = null;
}

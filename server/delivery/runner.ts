import { database } from "../db";
import { processSingleton } from "../singleton";
import { claimDue, deliverBatch, nextDueAt, releaseExpiredLeases } from "./outbox";

// The embedded delivery engine (the default; no extra process). It claims due outbox items
// and delivers them, wakes at once when a write lands (wakeRunner), sleeps until the next
// retry is due otherwise, and regularly returns expired leases to pending.

/** Items per claim: one claim, one platform round and one transaction per batch. */
const BATCH = 100;
/** Loops claiming at once: on PostgreSQL they overlap their round trips; PGlite has one connection. */
const WORKERS = { postgres: 3, pglite: 1 } as const;
const IDLE_POLL_MS = 1_000;
const SWEEP_EVERY_MS = 5_000;

interface RunnerState {
  running: boolean;
  /** Sleeping loops' wake-up calls. */
  waiters: Set<() => void>;
  woken: boolean;
  loops: Promise<void>[];
}

const state = processSingleton<RunnerState>("embedded-runner", () => ({ running: false, waiters: new Set(), woken: false, loops: [] }));

export function wakeRunner(): void {
  state.woken = true;
  for (const wake of state.waiters) wake();
}

async function sleep(ms: number): Promise<void> {
  if (state.woken) return;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      state.waiters.delete(done);
      resolve();
    }
    state.waiters.add(done);
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
        await deliverBatch(items);
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

export async function startRunner(): Promise<void> {
  if (state.running) return;
  state.running = true;
  const { kind } = await database();
  state.loops = Array.from({ length: WORKERS[kind] }, () => loop());
}

export async function stopRunner(): Promise<void> {
  state.running = false;
  for (const wake of state.waiters) wake();
  await Promise.all(state.loops);
  state.loops = [];
}

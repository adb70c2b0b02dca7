import { database } from "../db";
import { processSingleton } from "../singleton";
import { claimDue, deliverBatch, nextDueAt, releaseExpiredLeases, workerId } from "./outbox";
import { claimHead, dueLineHeads, expireStranded, serialBacklog } from "./serial";
import { log } from "../observability/log";

// The embedded delivery engine (the default; no extra process). It claims due outbox items
// and delivers them, wakes at once when a write lands (wakeRunner), sleeps until the next
// retry is due otherwise, and regularly returns expired leases to pending.

/** Items per claim: one claim, one platform round and one transaction per batch. */
const BATCH = 100;
/** Loops claiming at once during a backlog: on PostgreSQL they overlap their round trips; PGlite has one connection. */
const WORKERS = { postgres: 3, pglite: 1 } as const;
/**
 * After a batch of several items, wait this long for more before claiming again (unless a
 * full batch is waiting): under a stream of writes, batches grow instead of the runner
 * spending a claim and a transaction on every item. A lone write is still claimed at once.
 */
const GATHER_MS = 50;
const IDLE_POLL_MS = 1_000;
const SWEEP_EVERY_MS = 5_000;

type Waiter = () => void;

interface RunnerState {
  running: boolean;
  /** Writes since the primary loop last claimed. */
  wakes: number;
  /** The primary loop, asleep until a write lands or the next retry is due. */
  primary: Waiter | null;
  /** Extra loops, asleep until the primary loop sees a backlog. */
  helpers: Set<Waiter>;
  loops: Promise<void>[];
  /** The provider-line loop, asleep until a write lands or its next poll. */
  serial: Waiter | null;
  /** Sends under way on provider lines, by line: at most one each. */
  inFlight: Map<string, Promise<void>>;
  /** When the primary loop last went round (readiness: the runner is alive). */
  beatAt: number;
  /** Rounds the provider-line loop went (each costs two statements). */
  serialRounds: number;
}

const state = processSingleton<RunnerState>("embedded-runner", () => ({
  running: false,
  wakes: 0,
  primary: null,
  helpers: new Set(),
  loops: [],
  serial: null,
  inFlight: new Map(),
  beatAt: 0,
  serialRounds: 0,
}));

/** While provider lines have work, how often their heads are looked at (pacing is per second). */
const SERIAL_POLL_MS = 200;
/** On stop, how long sends under way on provider lines may still finish (their leases cover the rest). */
const STOP_GRACE_MS = 5_000;

/**
 * Called after a write commits: the item is claimed at once, or with the next batch. Only an
 * item on a provider line (`serial`) wakes the provider-line loop: waking it for every write
 * made it look for line heads (two statements, over every pending item) once per write under
 * load, a third of embedded PGlite's time during a stream of sends on simulated lines.
 */
export function wakeRunner(serial = true): void {
  state.wakes++;
  if (state.wakes === 1 || state.wakes >= BATCH) state.primary?.();
  if (serial) state.serial?.();
}

export function wait(ms: number, register: (w: Waiter) => void, unregister: (w: Waiter) => void): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      unregister(done);
      resolve();
    }
    register(done);
  });
}

const primaryWait = (ms: number) =>
  wait(
    ms,
    (w) => (state.primary = w),
    () => (state.primary = null),
  );
const serialWait = (ms: number) =>
  wait(
    ms,
    (w) => (state.serial = w),
    () => (state.serial = null),
  );
const helperWait = (ms: number) =>
  wait(
    ms,
    (w) => state.helpers.add(w),
    (w) => state.helpers.delete(w),
  );

async function primaryLoop(): Promise<void> {
  let lastSweep = 0;
  while (state.running) {
    state.beatAt = Date.now();
    try {
      if (Date.now() - lastSweep > SWEEP_EVERY_MS) {
        lastSweep = Date.now();
        await releaseExpiredLeases();
        await expireStranded();
      }
      state.wakes = 0;
      const items = await claimDue(BATCH);
      if (items.length === BATCH) for (const helper of state.helpers) helper();
      if (items.length) {
        await deliverBatch(items);
        if (items.length > 1 && state.wakes < BATCH && state.running) await primaryWait(GATHER_MS);
        continue;
      }
      if (state.wakes > 0) continue; // a write landed while claiming
      const next = await nextDueAt();
      if (state.wakes > 0 || !state.running) continue;
      await primaryWait(next ? Math.max(0, Math.min(IDLE_POLL_MS, next.getTime() - Date.now())) : IDLE_POLL_MS);
    } catch (err) {
      log().error({ err }, "runner error");
      await primaryWait(IDLE_POLL_MS);
    }
  }
}

/** Drains a backlog beside the primary loop, then sleeps until the next one. */
async function helperLoop(): Promise<void> {
  while (state.running) {
    try {
      const items = await claimDue(BATCH);
      if (items.length) await deliverBatch(items);
      if (items.length < BATCH && state.running) await helperWait(IDLE_POLL_MS * 5);
    } catch (err) {
      log().error({ err }, "runner error");
      await helperWait(IDLE_POLL_MS);
    }
  }
}

/**
 * Provider lines: each line's due head is claimed and sent in a task of its own, so a provider
 * that hangs for minutes holds up only its own line.
 */
async function serialLoop(): Promise<void> {
  while (state.running) {
    state.serialRounds++;
    try {
      const heads = await dueLineHeads();
      for (const head of heads) {
        if (!state.running || state.inFlight.has(head.lineId)) continue;
        const item = await claimHead(head.id, head.lineId, workerId);
        if (!item) continue;
        const task = deliverBatch([item])
          .catch((err: unknown) => log().error({ err }, `delivering ${item.id} failed unexpectedly`))
          .finally(() => {
            state.inFlight.delete(head.lineId);
            state.serial?.();
          });
        state.inFlight.set(head.lineId, task);
      }
      const busy = heads.length > 0 || state.inFlight.size > 0 || (await serialBacklog());
      if (state.running) await serialWait(busy ? SERIAL_POLL_MS : IDLE_POLL_MS);
    } catch (err) {
      log().error({ err }, "provider-line runner error");
      await serialWait(IDLE_POLL_MS);
    }
  }
}

export async function startRunner(): Promise<void> {
  if (state.running) return;
  state.running = true;
  const { kind } = await database();
  state.loops = [primaryLoop(), serialLoop(), ...Array.from({ length: WORKERS[kind] - 1 }, () => helperLoop())];
}

/** Whether the runner is running, and when its primary loop last went round. */
export function runnerHealth(): { running: boolean; beatAt: number } {
  return { running: state.running, beatAt: state.beatAt };
}

/** How many rounds the provider-line loop went since the process started (tests, the bench). */
export function serialRounds(): number {
  return state.serialRounds;
}

/** Stops claiming, then waits (at most graceMs) for sends under way to finish. */
export async function stopRunner(graceMs = STOP_GRACE_MS): Promise<void> {
  state.running = false;
  state.primary?.();
  state.serial?.();
  for (const helper of state.helpers) helper();
  await Promise.all(state.loops);
  state.loops = [];
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.all(state.inFlight.values()),
    new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs))),
  ]);
  clearTimeout(timer);
}

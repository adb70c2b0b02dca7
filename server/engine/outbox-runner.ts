import { database } from "../db";
import { processSingleton } from "../kernel/singleton";
import { claimDue, nextDueAt, workerId } from "../outbox/queue";
import { deliverBatch } from "../outbox/deliver";
import { claimHead, dueLineHeads, serialBacklog } from "../outbox/serial";
import { subscribe, type StoredItem } from "../kernel/signals";
import { log } from "../observability/log";
import { runLoop, Sleeper, withinGrace } from "./loop";

// The embedded delivery engine (the default; no extra process). It claims due outbox items
// and delivers them, wakes at once when a write lands (the outbox.stored signal), and sleeps
// until the next retry is due otherwise. Expired leases go back to pending by the chores
// (chores.ts), not here.

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
/** While provider lines have work, how often their heads are looked at (pacing is per second). */
const SERIAL_POLL_MS = 200;
/** On stop, how long sends under way on provider lines may still finish (their leases cover the rest). */
const STOP_GRACE_MS = 5_000;

interface RunnerState {
  running: boolean;
  /** Writes since the primary loop last claimed. */
  wakes: number;
  /** The primary loop, asleep until a write lands or the next retry is due. */
  primary: Sleeper;
  /** Extra loops, asleep until the primary loop sees a backlog. */
  helpers: Sleeper[];
  loops: Promise<void>[];
  /** The provider-line loop, asleep until a write lands or its next poll. */
  serial: Sleeper;
  /** Sends under way on provider lines, by line: at most one each. */
  inFlight: Map<string, Promise<void>>;
  /** Rounds the provider-line loop went (each costs two statements). */
  serialRounds: number;
  unsubscribe: (() => void) | null;
}

const state = processSingleton<RunnerState>("embedded-runner", () => ({
  running: false,
  wakes: 0,
  primary: new Sleeper(),
  helpers: [],
  loops: [],
  serial: new Sleeper(),
  inFlight: new Map(),
  serialRounds: 0,
  unsubscribe: null,
}));

/**
 * A write committed: the item is claimed at once, or with the next batch. Only an item on a
 * provider line (`serial`) wakes the provider-line loop: waking it for every write made it
 * look for line heads (two statements, over every pending item) once per write under load, a
 * third of embedded PGlite's time during a stream of sends on simulated lines.
 */
function onStored(item: StoredItem): void {
  state.wakes++;
  if (state.wakes === 1 || state.wakes >= BATCH) state.primary.wake();
  if (item.serial) state.serial.wake();
}

async function primaryRound(): Promise<void> {
  state.wakes = 0;
  const items = await claimDue(BATCH);
  if (items.length === BATCH) for (const helper of state.helpers) helper.wake();
  if (items.length) {
    await deliverBatch(items);
    if (items.length > 1 && state.wakes < BATCH && state.running) await state.primary.sleep(GATHER_MS);
    return;
  }
  if (state.wakes > 0) return; // a write landed while claiming
  const next = await nextDueAt();
  if (state.wakes > 0 || !state.running) return;
  await state.primary.sleep(next ? Math.max(0, Math.min(IDLE_POLL_MS, next.getTime() - Date.now())) : IDLE_POLL_MS);
}

/** Drains a backlog beside the primary loop, then sleeps until the next one. */
async function helperRound(sleeper: Sleeper): Promise<void> {
  const items = await claimDue(BATCH);
  if (items.length) await deliverBatch(items);
  if (items.length < BATCH && state.running) await sleeper.sleep(IDLE_POLL_MS * 5);
}

/**
 * Provider lines: each line's due head is claimed and sent in a task of its own, so a provider
 * that hangs for minutes holds up only its own line.
 */
async function serialRound(): Promise<void> {
  state.serialRounds++;
  const heads = await dueLineHeads();
  for (const head of heads) {
    if (!state.running || state.inFlight.has(head.lineId)) continue;
    const item = await claimHead(head.id, head.lineId, workerId);
    if (!item) continue;
    const task = deliverBatch([item])
      .catch((err: unknown) => log().error({ err }, `delivering ${item.id} failed unexpectedly`))
      .finally(() => {
        state.inFlight.delete(head.lineId);
        state.serial.wake();
      });
    state.inFlight.set(head.lineId, task);
  }
  const busy = heads.length > 0 || state.inFlight.size > 0 || (await serialBacklog());
  if (state.running) await state.serial.sleep(busy ? SERIAL_POLL_MS : IDLE_POLL_MS);
}

export async function startRunner(): Promise<void> {
  if (state.running) return;
  state.running = true;
  state.unsubscribe = subscribe("outbox.stored", onStored);
  const { kind } = await database();
  const running = () => state.running;
  state.helpers = Array.from({ length: WORKERS[kind] - 1 }, () => new Sleeper());
  state.loops = [
    runLoop({ heartbeat: "outbox_runner", label: "runner", running, round: primaryRound, sleeper: state.primary }),
    runLoop({ label: "provider-line runner", running, round: serialRound, sleeper: state.serial }),
    ...state.helpers.map((sleeper) => runLoop({ label: "runner", running, round: () => helperRound(sleeper), sleeper })),
  ];
}

/** How many rounds the provider-line loop went since the process started (tests, the bench). */
export function serialRounds(): number {
  return state.serialRounds;
}

/** Stops claiming, then waits (at most graceMs) for sends under way to finish. */
export async function stopRunner(graceMs = STOP_GRACE_MS): Promise<void> {
  state.running = false;
  state.unsubscribe?.();
  state.unsubscribe = null;
  state.primary.wake();
  state.serial.wake();
  for (const helper of state.helpers) helper.wake();
  await Promise.all(state.loops);
  state.loops = [];
  await withinGrace(Promise.all(state.inFlight.values()), graceMs);
}

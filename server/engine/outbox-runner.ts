import { database } from "../db";
import { processSingleton } from "../kernel/singleton";
import { claimDue, nextDueAt, workerId } from "../outbox/queue";
import { deliverBatch } from "../outbox/deliver";
import { claimLineHead, dueLineHeads, releaseDueHolds, serialBacklog } from "../outbox/serial";
import { subscribe, type StoredItem } from "../kernel/signals";
import { log } from "../kernel/log";
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
  /** Each provider line with work has its own loop (sending its items one after another, at its pace): at most one per line. */
  lineLoops: Map<string, { done: Promise<void>; sleeper: Sleeper }>;
  /** Rounds the provider-line loop went (each costs a few statements). */
  serialRounds: number;
  unsubscribe: (() => void) | null;
}

const state = processSingleton<RunnerState>("embedded-runner", () => ({
  running: false,
  wakes: 0,
  primary: new Sleeper(),
  helpers: [],
  loops: [],
  serial: new Sleeper({ remembers: true }),
  lineLoops: new Map(),
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
  // A line whose own loop is running takes the item itself (or, ending, wakes the provider-line loop).
  if (item.serial && !state.lineLoops.has(item.lineId)) state.serial.wake();
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
 * One provider line: claims its head as soon as the line's pacing slot frees, sends it, and
 * goes on while the line has a due head; then ends (the provider-line loop starts it again).
 * Each line goes in a task of its own, so a provider that hangs for minutes holds up only its
 * own line, and each line keeps its own pace however many lines are busy.
 */
async function lineLoop(lineId: string, sleeper: Sleeper): Promise<void> {
  while (state.running) {
    const claim = await claimLineHead(lineId, workerId);
    if (!claim) return; // nothing due, the slot is another instance's, or the line went away
    await deliverBatch([claim.item]).catch((err: unknown) => log().error({ err }, `delivering ${claim.item.id} failed unexpectedly`));
    const wait = claim.nextSlotAt.getTime() - Date.now() + 1; // a timer may fire within the millisecond before
    if (wait > 0 && state.running) await sleeper.sleep(wait);
  }
}

function startLineLoop(lineId: string): void {
  const sleeper = new Sleeper();
  const done = lineLoop(lineId, sleeper)
    .catch((err: unknown) => log().error({ err, line_id: lineId }, "provider-line loop failed"))
    .finally(() => {
      state.lineLoops.delete(lineId);
      state.serial.wake();
    });
  state.lineLoops.set(lineId, { done, sleeper });
}

/**
 * Provider lines: held items that came due take their place in line, then every line with a
 * due head and no loop of its own gets one.
 */
async function serialRound(): Promise<void> {
  state.serialRounds++;
  const now = new Date();
  await releaseDueHolds(now);
  const heads = await dueLineHeads(now);
  for (const head of heads) if (state.running && !state.lineLoops.has(head.lineId)) startLineLoop(head.lineId);
  const busy = heads.length > 0 || state.lineLoops.size > 0 || (await serialBacklog(now));
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
  for (const line of state.lineLoops.values()) line.sleeper.wake();
  await Promise.all(state.loops);
  state.loops = [];
  await withinGrace(Promise.all([...state.lineLoops.values()].map((l) => l.done)), graceMs);
}

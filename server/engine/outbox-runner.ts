import { database } from "../db";
import { processSingleton } from "../kernel/singleton";
import { claimDue, nextDueAt, workerId } from "../outbox/queue";
import { deliverBatch } from "../outbox/deliver";
import { claimLineHead, dueLineHeads, releaseDueHolds, serialBacklog } from "../outbox/serial";
import { subscribe, type StoredItem } from "../kernel/signals";
import { log } from "../kernel/log";
import { runLoop, Sleeper, withinGrace } from "./loop";

// The embedded engine (docs/architecture.md, "The engine").

const BATCH = 100;
/** Loops claiming at once during a backlog: on PostgreSQL they overlap their round trips; PGlite has one connection. */
const WORKERS = { postgres: 3, pglite: 1 } as const;
/** Under a stream of writes batches grow, instead of a claim and a transaction per item; a lone write still goes at once. */
const GATHER_MS = 50;
const IDLE_POLL_MS = 1_000;
const SERIAL_POLL_MS = 200;
const STOP_GRACE_MS = 5_000;

interface RunnerState {
  running: boolean;
  wakes: number;
  primary: Sleeper;
  helpers: Sleeper[];
  loops: Promise<void>[];
  serial: Sleeper;
  lineLoops: Map<string, { done: Promise<void>; sleeper: Sleeper }>;
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

// Only a provider-line item wakes the provider-line loop: waking it on every write made it look
// for line heads once per write, a third of PGlite's time under a stream of sends.
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

async function helperRound(sleeper: Sleeper): Promise<void> {
  const items = await claimDue(BATCH);
  if (items.length) await deliverBatch(items);
  if (items.length < BATCH && state.running) await sleeper.sleep(IDLE_POLL_MS * 5);
}

// A task per provider line: a provider that hangs holds up only its own line, and each line keeps its pace.
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

export function serialRounds(): number {
  return state.serialRounds;
}

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

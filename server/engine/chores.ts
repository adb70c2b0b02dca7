import { config } from "../kernel/config";
import { releaseExpiredLeases } from "../outbox/queue";
import { expireStranded } from "../outbox/serial";
import { forgetOldOpenings } from "../policy/new-contact-budget";
import { deleteExpiredIdempotencyRecords } from "../services/access/idempotency";
import { log } from "../kernel/log";
import { deleteStaleListenSessions } from "../services/webhooks/listen";
import { probeDueLines, sweepProviderEvents } from "../services/lines/line-monitor";
import { forgetOldStatusChanges } from "../services/lines/line-health";
import { processSingleton } from "../kernel/singleton";
import { releaseExpiredDeliveries } from "../webhooks/delivery";
import { checkpointIfDue, maintainIfDue } from "../db/wal";
import { runLoop, Sleeper } from "./loop";

// Every chore is safe on several instances at once: each claims its rows in the database.

export interface Chore {
  /** Stable: it is the Inngest step ID. */
  id: string;
  everyMs: () => number;
  /** `background`: the embedded loop must not wait for a provider; an Inngest step does. */
  run: (options: { background: boolean }) => Promise<number>;
}

const FIVE_SECONDS = () => 5_000;

export const CHORES: readonly Chore[] = [
  // A worker that died mid-send: its claims go back to pending (to be reconciled with the provider first).
  { id: "release-expired-outbox-leases", everyMs: FIVE_SECONDS, run: () => releaseExpiredLeases() },
  { id: "expire-stranded-sends", everyMs: FIVE_SECONDS, run: () => expireStranded() },
  { id: "release-expired-webhook-leases", everyMs: FIVE_SECONDS, run: () => releaseExpiredDeliveries() },
  { id: "delete-stale-listen-sessions", everyMs: FIVE_SECONDS, run: () => deleteStaleListenSessions() },
  { id: "delete-expired-idempotency-records", everyMs: FIVE_SECONDS, run: () => deleteExpiredIdempotencyRecords() },
  // Each line is probed by one instance: the probe time is claimed in the database first.
  { id: "probe-due-lines", everyMs: () => Math.min(5_000, config().PROVIDER_PROBE_SECONDS * 1000), run: ({ background }) => probeDueLines(new Date(), { wait: !background }) },
  { id: "forget-old-provider-events", everyMs: () => 3_600_000, run: () => sweepProviderEvents() },
  { id: "forget-old-line-status-changes", everyMs: () => 3_600_000, run: () => forgetOldStatusChanges() },
  { id: "forget-old-contact-openings", everyMs: () => 3_600_000, run: () => forgetOldOpenings() },
  // Embedded PGlite has no checkpointer: without this its WAL grows until writes hang (server/db/wal.ts).
  { id: "checkpoint-embedded-database", everyMs: FIVE_SECONDS, run: () => checkpointIfDue() },
  // Nor autovacuum: without this its tables bloat and the planner has no statistics (server/db/wal.ts).
  { id: "maintain-embedded-database", everyMs: () => 60_000, run: () => maintainIfDue() },
];

const LOOK_EVERY_MS = 1_000;

const state = processSingleton("chores", () => ({
  running: false,
  lastRun: new Map<string, number>(),
  sleeper: new Sleeper(),
  loop: null as Promise<void> | null,
  only: (() => true) as (chore: Chore) => boolean,
}));

async function runDueChores(now = Date.now()): Promise<void> {
  for (const chore of CHORES) {
    if (!state.only(chore) || now - (state.lastRun.get(chore.id) ?? 0) < chore.everyMs()) continue;
    state.lastRun.set(chore.id, now);
    try {
      await chore.run({ background: true });
    } catch (err) {
      log().error({ err, chore: chore.id }, "chore failed");
    }
  }
}

/** `only`: for tests that run no line monitor. */
export function startChores(only: (chore: Chore) => boolean = () => true): void {
  if (state.running) return;
  state.running = true;
  state.only = only;
  state.loop = runLoop({
    heartbeat: "chores",
    label: "chores",
    running: () => state.running,
    sleeper: state.sleeper,
    round: async () => {
      await runDueChores();
      if (state.running) await state.sleeper.sleep(LOOK_EVERY_MS);
    },
  });
}

export async function stopChores(): Promise<void> {
  state.running = false;
  state.sleeper.wake();
  await state.loop;
  state.loop = null;
}

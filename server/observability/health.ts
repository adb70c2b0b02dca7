import { config } from "../kernel/config";
import { database, sql } from "../db";
import { databaseFailedTooLong, databaseFailing, noteDatabaseFailure, shortCause } from "../db/database-failures";
import { withTimeout } from "../kernel/timeout";
import { lineStatusCounts } from "./line-counts";
import { readMigrations } from "../db/migrations";
import { heartbeat } from "./heartbeats";
import { isShuttingDown } from "../kernel/shutdown";
import { checkStorage } from "../storage";

// Provider lines do not decide readiness: a phone that is off is no reason to take the instance out
// of the load balancer.

const CHECK_TIMEOUT_MS = 3_000;
const DB_SLOW = `the database did not answer within ${CHECK_TIMEOUT_MS / 1000} s`;
const RUNNER_STALE_MS = 60_000;
/** Probes arriving together (several load balancers) share one round of checks. */
const REUSE_MS = 1_000;

interface Check {
  ok: boolean;
  error?: string;
  [detail: string]: unknown;
}

export interface Readiness {
  status: "ready" | "not_ready" | "shutting_down";
  checks?: { database: Check; storage: Check; delivery: Check };
  lines?: { total: number; by_status: Record<string, number>; by_provider: Record<string, Record<string, number>> };
}

let shipped: Promise<string[]> | null = null;

async function probeDatabase(timeoutMs: number): Promise<void> {
  const rows = await withTimeout(sql<{ ok: number }>(`SELECT 1 AS ok`), timeoutMs, `the database did not answer within ${timeoutMs / 1000} s`);
  if (rows.length !== 1 || rows[0]!.ok !== 1) throw new Error("the database gave a wrong answer to SELECT 1");
}

async function checkDatabase(): Promise<Check> {
  const started = Date.now();
  let kind: string | undefined;
  try {
    ({ kind } = await withTimeout(database(), CHECK_TIMEOUT_MS, DB_SLOW));
    await probeDatabase(CHECK_TIMEOUT_MS);
  } catch (err) {
    noteDatabaseFailure(err); // a database that hangs fails too
    const failing = databaseFailing();
    return {
      ok: false,
      ...(kind ? { kind } : {}),
      error: `database unreachable: ${shortCause(err)}`,
      ...(failing ? { failing_for_seconds: Math.round((Date.now() - failing.since) / 1000) } : {}),
    };
  }
  try {
    const [applied, names] = await withTimeout(
      Promise.all([
        sql<{ migration_name: string }>(`SELECT migration_name FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL`),
        (shipped ??= readMigrations().then((files) => files.map((f) => f.name))),
      ]),
      CHECK_TIMEOUT_MS,
      DB_SLOW,
    );
    const done = new Set(applied.map((r) => r.migration_name));
    const pending = names.filter((n) => !done.has(n));
    return {
      ok: pending.length === 0,
      kind,
      latency_ms: Date.now() - started,
      migrations: { applied: done.size, pending },
      ...(pending.length ? { error: `${pending.length} migration(s) not applied` } : {}),
    };
  } catch (err) {
    return { ok: false, kind, error: `could not read the applied migrations: ${shortCause(err)}` };
  }
}

async function checkFiles(): Promise<Check> {
  const kind = config().storage.kind;
  try {
    await checkStorage({ timeoutMs: CHECK_TIMEOUT_MS });
    return { ok: true, kind };
  } catch (err) {
    return { ok: false, kind, error: shortCause(err) };
  }
}

function checkDelivery(): Check {
  const engine = config().deliveryEngine;
  if (engine === "inngest") return { ok: true, engine };
  const now = Date.now();
  const loop = (h: { running: boolean; beatAt: number }) => ({ running: h.running, last_round_ms_ago: h.beatAt ? now - h.beatAt : null });
  const outbox = loop(heartbeat("outbox_runner"));
  const webhooks = loop(heartbeat("webhook_sender"));
  const alive = (l: ReturnType<typeof loop>) => l.running && l.last_round_ms_ago !== null && l.last_round_ms_ago < RUNNER_STALE_MS;
  const ok = alive(outbox) && alive(webhooks);
  return { ok, engine, outbox_runner: outbox, webhook_sender: webhooks, ...(ok ? {} : { error: "a delivery loop is not running" }) };
}

type LineSummary = NonNullable<Readiness["lines"]>;

async function lineSummary(): Promise<LineSummary> {
  const rows = await withTimeout(lineStatusCounts(), CHECK_TIMEOUT_MS, DB_SLOW).catch(() => []);
  const summary: LineSummary = { total: 0, by_status: {}, by_provider: {} };
  for (const { provider, status, n } of rows) {
    summary.total += n;
    summary.by_status[status] = (summary.by_status[status] ?? 0) + n;
    (summary.by_provider[provider] ??= {})[status] = n;
  }
  return summary;
}

async function evaluate(): Promise<Readiness> {
  const [db, storage, lines] = await Promise.all([checkDatabase(), checkFiles(), lineSummary()]);
  const delivery = checkDelivery();
  const status = db.ok && storage.ok && delivery.ok ? "ready" : "not_ready";
  return { status, checks: { database: db, storage, delivery }, lines };
}

let last: { at: number; value: Promise<Readiness> } | null = null;

export function readiness(): Promise<Readiness> {
  if (isShuttingDown()) return Promise.resolve({ status: "shutting_down" });
  if (!last || Date.now() - last.at > REUSE_MS) last = { at: Date.now(), value: evaluate() };
  return last.value;
}

export interface Liveness {
  ok: boolean;
  database?: { failing_for_seconds: number; error: string };
}

/** Confirmed by one more query, so a single old failure never restarts a healthy process. */
export async function liveness(): Promise<Liveness> {
  if (!databaseFailedTooLong()) return { ok: true };
  try {
    await probeDatabase(2_000);
    return { ok: true };
  } catch (err) {
    noteDatabaseFailure(err);
    const failing = databaseFailing();
    if (!failing) return { ok: true };
    return { ok: false, database: { failing_for_seconds: Math.round((Date.now() - failing.since) / 1000), error: failing.error } };
  }
}

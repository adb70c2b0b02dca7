import { config } from "../config";
import { DELIVERY_REPORT_RETENTION_MS } from "./delivery-status";
import { getDb, sql } from "../db";
import type { Line } from "../generated/prisma/client";
import { CredentialsError } from "../credentials";
import { databaseFailure } from "../db/errors";
import { ApiError } from "../errors";
import type { ProviderLine } from "../platform/provider";
import type { ProviderInbound } from "../platform/types";
import { providerLine } from "../platform/connection";
import { findProvider } from "../platform/registry";
import { processSingleton } from "../singleton";
import { noteProviderDown, onLineRecovered, probeLine } from "./line-health";
import { ingestProviderEvent, type InboundOutcome } from "./provider-inbound";
import { log } from "../observability/log";

// Nothing missed while away: webhooks are lost while this service is down or the provider's
// host sleeps. Catch-up asks the provider for the messages after the newest one taken in (the
// line's catch-up cursor), a page at a time, through the same dedupe path as webhooks. It runs
// on connect, on start, when a line comes back from disconnected, and after every periodic
// probe (so even a webhook the provider dropped arrives within a probe interval).

const PAGE = 500;
/** Catch-up re-reads this much before its cursor. */
export const CATCH_UP_OVERLAP_MS = 5 * 60_000;
/** A bound on one catch-up: 100 pages of 500. */
const MAX_PAGES = 100;

const running = processSingleton("catch-up-running", () => new Map<string, Promise<CatchUpReport>>());

export interface CatchUpReport {
  pages: number;
  counts: Record<InboundOutcome, number>;
  error: string | null;
}

async function runCatchUp(lineId: string): Promise<CatchUpReport> {
  const report: CatchUpReport = { pages: 0, counts: { stored: 0, duplicate: 0, adopted: 0, ignored: 0 }, error: null };
  const db = await getDb();
  const line = await db.line.findUnique({ where: { id: lineId } });
  const provider = line ? findProvider(line.provider) : null;
  if (!line || !provider?.catchUp || line.isSandbox) return report;
  if (!line.catchupAfter) {
    await sql(`UPDATE "Line" SET "catchupAfter" = $2 WHERE id = $1 AND "catchupAfter" IS NULL`, [line.id, new Date()]);
    return report;
  }
  // A little before the newest message taken in: one that failed to store while later ones did
  // is read again (what is already stored is a duplicate, skipped by the unique constraint).
  const after = line.catchupAfter.getTime() - CATCH_UP_OVERLAP_MS;
  try {
    const pl = providerLine(line);
    for (let offset = 0; report.pages < MAX_PAGES; report.pages++) {
      const events = await provider.catchUp(pl, after, { offset, limit: PAGE });
      for (const event of events) report.counts[await ingestIsolated(line, pl, event)]++;
      if (events.length < PAGE) {
        report.pages++;
        break;
      }
      offset += events.length;
    }
  } catch (err) {
    report.error = err instanceof CredentialsError ? err.message : `catch-up failed: ${(err as Error).message}`;
    // Our database failing says nothing about the provider: the line's health stays as it is.
    if (!databaseFailure(err)) await noteProviderDown(line.id, report.error);
  }
  return report;
}

/**
 * One caught-up event, isolated: an event we fail to take in (a bug of ours, or something the
 * database refuses in it) is logged and skipped, so it never blocks the events after it or
 * makes the line look down. The database itself failing still ends the catch-up.
 */
async function ingestIsolated(line: Line, pl: ProviderLine, event: ProviderInbound): Promise<InboundOutcome> {
  try {
    return await ingestProviderEvent(line, pl, event);
  } catch (err) {
    if (databaseFailure(err) || (err instanceof ApiError && err.status >= 500)) throw err;
    log().error({ err, line_id: line.id, kind: event.kind }, "a caught-up event could not be taken in; skipped");
    return "ignored";
  }
}

/** Catches a line up with its provider; concurrent calls for one line share one run. */
export function catchUpLine(lineId: string): Promise<CatchUpReport> {
  let run = running.get(lineId);
  if (!run) {
    run = runCatchUp(lineId).finally(() => running.delete(lineId));
    running.set(lineId, run);
  }
  return run;
}

/**
 * Probes every provider line not probed for PROVIDER_PROBE_SECONDS (one instance per line: the
 * probe time is claimed in the database first), then catches up the ones that answer.
 */
export async function probeDueLines(now = new Date()): Promise<number> {
  const due = new Date(now.getTime() - config().PROVIDER_PROBE_SECONDS * 1000);
  const claimed = await sql<{ id: string }>(
    `UPDATE "Line" SET "lastProbeAt" = $1
     WHERE platform <> 'simulated' AND NOT "isSandbox" AND "isActive" AND ("lastProbeAt" IS NULL OR "lastProbeAt" < $2)
     RETURNING id`,
    [now, due],
  );
  if (!claimed.length) return 0;
  const db = await getDb();
  const lines: Line[] = await db.line.findMany({ where: { id: { in: claimed.map((c) => c.id) } } });
  await Promise.all(
    lines.map(async (line) => {
      const { probe } = await probeLine(line);
      if (probe.ok) await catchUpLine(line.id);
    }),
  );
  return lines.length;
}

/** How long provider event keys are kept for dedupe: BlueBubbles replays up to a week after a restart. */
export const PROVIDER_EVENT_RETENTION_MS = 30 * 86_400_000;

/** Forgets provider event keys and delivery reports older than their retention (Message rows keep their own GUIDs). */
export async function sweepProviderEvents(now = Date.now()): Promise<number> {
  const rows = await sql(`DELETE FROM "ProviderEvent" WHERE "createdAt" < $1 RETURNING 1`, [new Date(now - PROVIDER_EVENT_RETENTION_MS)]);
  const reports = await sql(`DELETE FROM "DeliveryReport" WHERE "createdAt" < $1 RETURNING 1`, [new Date(now - DELIVERY_REPORT_RETENTION_MS)]);
  return rows.length + reports.length;
}

/** Catch-up for every provider line (on start). */
export async function catchUpAll(): Promise<void> {
  const lines = await sql<{ id: string }>(`SELECT id FROM "Line" WHERE platform <> 'simulated' AND NOT "isSandbox" AND "isActive"`);
  await Promise.all(lines.map((l) => catchUpLine(l.id)));
}

const monitor = processSingleton<{ timer: NodeJS.Timeout | null; busy: boolean; off: (() => void) | null; swept: number }>("line-monitor", () => ({
  timer: null,
  busy: false,
  off: null,
  swept: 0,
}));

/** The embedded engine's health loop: probes due lines every few seconds; catch-up on recovery. */
export function startLineMonitor(): void {
  if (monitor.timer) return;
  monitor.off = onLineRecovered((line) => void catchUpLine(line.id));
  const tick = () => {
    if (monitor.busy) return;
    monitor.busy = true;
    probeDueLines()
      .then(() => (Date.now() - monitor.swept > 3_600_000 ? sweepProviderEvents().then(() => (monitor.swept = Date.now())) : undefined))
      .catch((err: unknown) => log().error({ err }, "probe loop error"))
      .finally(() => (monitor.busy = false));
  };
  monitor.timer = setInterval(tick, Math.min(5_000, config().PROVIDER_PROBE_SECONDS * 1000));
  monitor.timer.unref();
  void catchUpAll().catch((err: unknown) => log().error({ err }, "catch-up on start failed"));
}

export function stopLineMonitor(): void {
  if (monitor.timer) clearInterval(monitor.timer);
  monitor.timer = null;
  monitor.off?.();
  monitor.off = null;
}

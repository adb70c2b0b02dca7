import { config } from "../../kernel/config";
import { DELIVERY_REPORT_RETENTION_MS } from "../../messages/delivery-status";
import { getDb, sql } from "../../db";
import type { Line } from "../../generated/prisma/client";
import { CredentialsError } from "../../db/credentials";
import { databaseFailure } from "../../db/database-failures";
import { ApiError } from "../../kernel/errors";
import type { ProviderLine } from "../../platform/provider";
import type { ProviderInbound } from "../../platform/types";
import { providerLine } from "../../platform/connection";
import { findProvider, MONITORED_PROVIDERS } from "../../platform/registry";
import { processSingleton } from "../../kernel/singleton";
import { noteProviderDown, noteWebhooksInPlace, noteWebhooksMissing, probeLine, WEBHOOK_GRACE, webhooksExpectedSince } from "./line-health";
import { ingestProviderEvent, type InboundOutcome } from "../inbound/provider-events";
import { log } from "../../kernel/log";
import { withTimeout } from "../../kernel/timeout";
import { fairSlots } from "../../platform/download-slots";

const PAGE = 500;
const CATCH_UP_OVERLAP_MS = 5 * 60_000;
const MAX_PAGES = 100;

const running = processSingleton("catch-up-running", () => new Map<string, Promise<CatchUpReport>>());

export interface CatchUpReport {
  pages: number;
  counts: Record<InboundOutcome, number>;
  error: string | null;
}

async function runCatchUp(lineId: string): Promise<CatchUpReport> {
  // No new page after half the check's deadline (the probe came first): a long backlog goes on
  // at the next run, from where the cursor moved, instead of running into the deadline.
  const until = Date.now() + (config().PROVIDER_CHECK_TIMEOUT_SECONDS * 1000) / 2;
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
  // Messages the webhook should have brought: after this process saw the registration in place.
  const expectedSince = webhooksExpectedSince(line.id);
  const graceEnd = Date.now() - WEBHOOK_GRACE.ms;
  let missed = 0;
  try {
    const pl = providerLine(line);
    for (let offset = 0; report.pages < MAX_PAGES; report.pages++) {
      const events = await provider.catchUp(pl, after, { offset, limit: PAGE });
      for (const event of events) {
        const outcome = await ingestIsolated(line, pl, event);
        report.counts[outcome]++;
        if (outcome === "stored" && event.kind === "message" && !event.isFromMe && expectedSince !== null && event.sentAt > expectedSince && event.sentAt < graceEnd) missed++;
      }
      if (events.length < PAGE || Date.now() >= until) {
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
  if (missed && !report.error) {
    const origin = new URL(config().PUBLIC_URL).origin;
    await noteWebhooksMissing(
      line.id,
      `webhooks are not arriving: catch-up found ${missed} message(s) the provider's webhook never delivered to ${origin} (check that the provider can reach PUBLIC_URL)`,
    );
  }
  return report;
}

// An event we fail to take in is logged and skipped, never blocking the ones after it nor making the line look down;
// the database itself failing still ends the catch-up.
async function ingestIsolated(line: Line, pl: ProviderLine, event: ProviderInbound): Promise<InboundOutcome> {
  try {
    return await ingestProviderEvent(line, pl, event);
  } catch (err) {
    if (databaseFailure(err) || (err instanceof ApiError && err.status >= 500)) throw err;
    log().error({ err, line_id: line.id, kind: event.kind }, "a caught-up event could not be taken in; skipped");
    return "ignored";
  }
}

/** Providers whose webhook the operator sets (Twilio) are left as they are. */
async function syncWebhooks(line: Line): Promise<void> {
  const provider = findProvider(line.provider);
  if (!provider?.inbound || line.isSandbox || !line.isActive) return;
  if (!provider.webhooksRegistered || !provider.registerWebhooks) {
    noteWebhooksInPlace(line.id, { renewed: false });
    return;
  }
  try {
    const pl = providerLine(line);
    if (await provider.webhooksRegistered(pl)) {
      noteWebhooksInPlace(line.id, { renewed: false });
      return;
    }
    const warnings = await provider.registerWebhooks(pl);
    if (warnings.length) {
      log().warn({ lineId: line.id, warnings }, "webhook registration incomplete");
      return;
    }
    noteWebhooksInPlace(line.id, { renewed: true });
    log().info({ lineId: line.id, url: pl.inboundUrl.replace(/\?.*$/, "") }, "registered the line's webhooks at this server's PUBLIC_URL");
  } catch (err) {
    log().warn({ lineId: line.id, err: (err as Error).message }, "could not check or register the line's webhooks");
  }
}

/** Concurrent calls for one line share one run. */
export function catchUpLine(lineId: string): Promise<CatchUpReport> {
  let run = running.get(lineId);
  if (!run) {
    run = runCatchUp(lineId).finally(() => running.delete(lineId));
    running.set(lineId, run);
  }
  return run;
}

// A provider that hangs holds a check slot for PROVIDER_CHECK_TIMEOUT_SECONDS at most; a line has one check at a time,
// so an account's wait is bounded by its lines.

const checks = processSingleton("line-check-slots", () => ({
  slots: fairSlots({ perProcess: () => config().PROVIDER_CHECK_CONCURRENCY }),
  lines: new Set<string>(),
}));

/** Work past its deadline goes on (its calls have their own timeouts) but frees the slot, and the line is degraded. */
async function checkLine(line: Line, what: string, work: () => Promise<unknown>): Promise<void> {
  const lineId = line.id;
  if (checks.lines.has(lineId)) return;
  checks.lines.add(lineId);
  const seconds = config().PROVIDER_CHECK_TIMEOUT_SECONDS;
  const late = `the provider's ${what} took longer than ${seconds} s (PROVIDER_CHECK_TIMEOUT_SECONDS)`;
  try {
    await checks.slots.run({ accountId: line.accountId ?? "", lineId }, () => {
      const running = Promise.resolve()
        .then(work)
        .finally(() => checks.lines.delete(lineId));
      return withTimeout(running, seconds * 1000, late);
    });
  } catch (err) {
    const message = (err as Error).message;
    log().warn({ lineId, err: message }, "line check failed");
    if (message === late) await noteProviderDown(lineId, late).catch(() => undefined);
  }
}

async function probeAndCatchUp(line: Line): Promise<void> {
  const { line: probed, probe } = await probeLine(line);
  if (!probe.ok) return;
  await syncWebhooks(probed);
  await catchUpLine(line.id);
}

/** One instance per line: the probe time is claimed in the database first. `wait: false` returns once they are under way. */
export async function probeDueLines(now = new Date(), options: { wait?: boolean } = {}): Promise<number> {
  const due = new Date(now.getTime() - config().PROVIDER_PROBE_SECONDS * 1000);
  const claimed = await sql<{ id: string }>(
    `UPDATE "Line" SET "lastProbeAt" = $1
     WHERE platform = ANY($3::text[]) AND NOT "isSandbox" AND "isActive" AND ("lastProbeAt" IS NULL OR "lastProbeAt" < $2)
     RETURNING id`,
    [now, due, MONITORED_PROVIDERS],
  );
  if (!claimed.length) return 0;
  const db = await getDb();
  const lines: Line[] = await db.line.findMany({ where: { id: { in: claimed.map((c) => c.id) } } });
  const all = Promise.all(lines.map((line) => checkLine(line, "probe and catch-up", () => probeAndCatchUp(line))));
  if (options.wait !== false) await all;
  else all.catch((err: unknown) => log().error({ err }, "line checks failed"));
  return lines.length;
}

/** How long provider event keys are kept for dedupe: BlueBubbles replays up to a week after a restart. */
const PROVIDER_EVENT_RETENTION_MS = 30 * 86_400_000;

/** Message rows keep their own GUIDs. */
export async function sweepProviderEvents(now = Date.now()): Promise<number> {
  const rows = await sql(`DELETE FROM "ProviderEvent" WHERE "createdAt" < $1 RETURNING 1`, [new Date(now - PROVIDER_EVENT_RETENTION_MS)]);
  const reports = await sql(`DELETE FROM "DeliveryReport" WHERE "createdAt" < $1 RETURNING 1`, [new Date(now - DELIVERY_REPORT_RETENTION_MS)]);
  return rows.length + reports.length;
}

export async function catchUpAll(): Promise<void> {
  const db = await getDb();
  const lines = await db.line.findMany({ where: { provider: { in: MONITORED_PROVIDERS }, isSandbox: false, isActive: true } });
  await Promise.all(
    lines.map((l) =>
      checkLine(l, "webhook check and catch-up", async () => {
        await syncWebhooks(l);
        await catchUpLine(l.id);
      }),
    ),
  );
}

import { getDb, type Prisma, sql } from "../../db";
import { processSingleton } from "../../kernel/singleton";
import type { Line } from "../../generated/prisma/client";
import { CredentialsError } from "../../db/credentials";
import { providerLine } from "../../platform/connection";
import { findProvider, isMonitored } from "../../platform/registry";
import type { ProbeResult } from "../../platform/types";
import { fire, subscribe } from "../../kernel/signals";
import { log } from "../../kernel/log";
import { prismaUnitOfWork } from "../../write/unit";
import { findLine, forgetCachedLines } from "./lines";

type LineStatus = "connected" | "degraded" | "disconnected";

const DISCONNECT_AFTER = 3;

type Extra = Pick<Prisma.LineUncheckedUpdateInput, "failures" | "lastEventAt" | "lastProbeAt" | "capabilities" | "advancedFeatures">;

async function setStatus(line: Line, status: LineStatus, reason: string | null, extra: Extra = {}): Promise<Line> {
  const now = new Date();
  const changed = line.status !== status || (status !== "connected" && line.statusReason !== reason);
  const updated = await prismaUnitOfWork(async (unit) => {
    const row = await unit.tx.line.update({
      where: { id: line.id },
      data: {
        ...extra,
        status,
        statusReason: reason,
        ...(line.status !== status ? { statusChangedAt: now } : {}),
      },
    });
    if (changed && line.accountId) unit.changed([line.accountId]);
    if (line.status !== status && line.accountId) {
      const data = {
        object: "line_status",
        line_id: line.id,
        line_handle: line.handle,
        provider: line.provider,
        status,
        previous_status: line.status,
        status_reason: reason,
        changed_at: now.getTime(),
      };
      await unit.fanOut([{ accountId: line.accountId, lineId: line.id, event: "line.status_changed", data }]);
      // The history the overview's line health chart is drawn from.
      await unit.tx.lineStatusChange.create({
        data: { lineId: line.id, accountId: line.accountId, status, previousStatus: line.status, reason, at: now },
      });
    }
    return row;
  });
  if (changed) {
    forgetCachedLines();
    if (line.status !== status) {
      log().info({ line_id: line.id, provider: line.provider, status, previous_status: line.status, reason: reason ?? undefined }, "line status changed");
    }
    if (line.status === "disconnected" && status !== "disconnected") fire("line.recovered", { lineId: line.id });
  }
  return updated;
}

export function noteUnmonitored(line: Line): Promise<Line> {
  return setStatus(line, "connected", null);
}

/** The overview shows 14 days. */
const STATUS_HISTORY_MS = 30 * 86_400_000;

export async function forgetOldStatusChanges(now = Date.now()): Promise<number> {
  const rows = await sql(`DELETE FROM "LineStatusChange" WHERE at < $1 RETURNING 1`, [new Date(now - STATUS_HISTORY_MS)]);
  return rows.length;
}

async function load(lineId: string): Promise<Line | null> {
  const db = await getDb();
  return db.line.findUnique({ where: { id: lineId } });
}

/** How old a message catch-up finds must be before its missing webhook counts (webhooks in flight, provider clocks). */
export const WEBHOOK_GRACE = { ms: 60_000 };

const webhookWatch = processSingleton("webhook-watch", () => ({ since: new Map<string, number>(), missing: new Map<string, string>() }));

export function noteWebhooksInPlace(lineId: string, options: { renewed: boolean }, at = Date.now()): void {
  if (options.renewed || !webhookWatch.since.has(lineId)) webhookWatch.since.set(lineId, at);
  if (options.renewed) webhookWatch.missing.delete(lineId);
}

export function webhooksExpectedSince(lineId: string): number | null {
  return webhookWatch.since.get(lineId) ?? null;
}

/** Without counting a failure. */
export async function noteWebhooksMissing(lineId: string, reason: string): Promise<void> {
  webhookWatch.missing.set(lineId, reason);
  const line = await load(lineId);
  if (!line || !isMonitored(line.provider) || line.status === "disconnected") return;
  await setStatus(line, "degraded", reason);
}

const storageFull = processSingleton("storage-full", () => new Map<string, string>());

function standingReason(lineId: string): string | null {
  return webhookWatch.missing.get(lineId) ?? storageFull.get(lineId) ?? null;
}

export async function noteStorageFull(lineId: string, reason: string): Promise<void> {
  storageFull.set(lineId, reason);
  const line = await load(lineId);
  const shown = standingReason(lineId);
  if (!line || line.status === "disconnected" || (line.status === "degraded" && line.statusReason === shown)) return;
  await setStatus(line, "degraded", shown);
}

export async function noteStorageAvailable(lineId: string): Promise<void> {
  const reason = storageFull.get(lineId);
  if (reason === undefined) return;
  storageFull.delete(lineId);
  const line = await load(lineId);
  if (line?.status !== "degraded" || line.statusReason !== reason) return;
  const standing = standingReason(lineId);
  await setStatus(line, standing ? "degraded" : "connected", standing);
}

/** When this process last wrote a line's lastEventAt (at most once a second each). */
const lastWritten = processSingleton("provider-up", () => new Map<string, number>());

// What the outbox learns from each send (the provider answered, or could not be reached) is
// this line's health too: it fires provider.answered, and whichever process has this module
// loaded records it before the send's outcome is.
processSingleton("line-health-subscription", () =>
  subscribe("provider.answered", ({ lineId, reachable, reason }) =>
    (reachable ? noteProviderUp(lineId) : noteProviderDown(lineId, reason ?? "the provider could not be reached")).catch(() => undefined),
  ),
);

/** While its webhooks are missing, only a webhook makes the line connected again. */
export async function noteProviderUp(lineId: string, via: "call" | "webhook" = "call"): Promise<void> {
  if (via === "webhook") webhookWatch.missing.delete(lineId);
  const cached = await findLine(lineId); // the hot inbound path: no read of its own while healthy
  if (!cached || !isMonitored(cached.provider)) return;
  const now = Date.now();
  if (cached.status === "connected" && cached.failures === 0) {
    if (now - (lastWritten.get(lineId) ?? 0) < 1_000) return;
    lastWritten.set(lineId, now);
    if (lastWritten.size > 10_000) lastWritten.clear();
    await sql(`UPDATE "Line" SET "lastEventAt" = $2 WHERE id = $1`, [lineId, new Date(now)]);
    return;
  }
  const line = await load(lineId);
  if (!line || (line.status === "connected" && line.failures === 0)) return;
  const missing = standingReason(lineId);
  if (missing && line.status === "degraded" && line.statusReason === missing && line.failures === 0) return;
  await setStatus(line, missing ? "degraded" : "connected", missing ?? null, { failures: 0, lastEventAt: new Date(now) });
}

export async function noteProviderDown(lineId: string, reason: string): Promise<void> {
  const line = await load(lineId);
  if (!line || !isMonitored(line.provider)) return;
  const failures = line.failures + 1;
  await setStatus(line, failures >= DISCONNECT_AFTER ? "disconnected" : "degraded", reason, { failures });
}

async function applyProbe(line: Line, probe: ProbeResult): Promise<Line> {
  const now = new Date();
  if (!probe.ok) {
    const failures = line.failures + 1;
    return setStatus(line, failures >= DISCONNECT_AFTER ? "disconnected" : "degraded", probe.reason ?? "the provider did not answer", {
      failures,
      lastProbeAt: now,
    });
  }
  const fields: Extra = {
    failures: 0,
    lastProbeAt: now,
    lastEventAt: now,
    capabilities: probe.capabilities,
    ...(isMonitored(line.provider) ? { advancedFeatures: probe.advancedFeatures } : {}),
  };
  // Answering but short of what the line had (a Private API helper that stopped) is degraded;
  // so is a line whose webhooks do not arrive.
  const lost = isMonitored(line.provider) && line.advancedFeatures && !probe.advancedFeatures && probe.reason;
  const reason = lost ? probe.reason : standingReason(line.id);
  return setStatus(line, reason ? "degraded" : "connected", reason, fields);
}

export async function probeLine(line: Line): Promise<{ line: Line; probe: ProbeResult }> {
  const provider = findProvider(line.provider);
  let probe: ProbeResult;
  if (!provider) {
    probe = { ok: false, reason: `unknown provider ${line.provider}`, capabilities: {}, advancedFeatures: false };
  } else {
    try {
      probe = await provider.probe(providerLine(line));
    } catch (err) {
      const reason = err instanceof CredentialsError ? err.message : `probe failed: ${(err as Error).message}`;
      probe = { ok: false, reason, capabilities: {}, advancedFeatures: false };
    }
  }
  return { line: await applyProbe(line, probe), probe };
}

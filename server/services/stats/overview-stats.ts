import { z } from "zod";
import type { Actor } from "../access/actor";
import { sql } from "../../db";
import { processSingleton } from "../../kernel/singleton";
import { simulatorEnabled } from "../inbound/simulated-phone";

// Per-day buckets over the last DAYS days in the browser's time zone (local midnights, DST included; UTC when the
// database does not know the zone). Each chart is one statement over an indexed range.

const DAYS = 14;

export const OverviewStatsQuery = z.object({
  time_zone: z.string().trim().min(1).max(64).regex(/^[A-Za-z0-9_+\-/]+$/, "must be an IANA time zone name").optional(),
});

type LineStatus = "connected" | "degraded" | "disconnected";

interface DayWindow {
  tz: string;
  now: Date;
}

const DAYS_CTE = `days AS (
  SELECT d::date AS day, d AT TIME ZONE $2 AS day_start, (d + interval '1 day') AT TIME ZONE $2 AS day_end
  FROM generate_series(date_trunc('day', $1::timestamptz AT TIME ZONE $2) - interval '${DAYS - 1} days',
                       date_trunc('day', $1::timestamptz AT TIME ZONE $2), interval '1 day') AS d
), span AS (SELECT min(day_start) AS since, max(day_end) AS until FROM days)`;

// The window's bounds as scalar subqueries: the planner takes them as index conditions (a join
// with the span would be a filter applied after reading every row of the account).
const SINCE = "(SELECT since FROM span)";
const UNTIL = "(SELECT until FROM span)";

const bucket = (col: string) => `(date_trunc('day', ${col} AT TIME ZONE $2))::date`;

const zones = processSingleton("overview-time-zones", () => new Map<string, boolean>());

async function knownZone(tz: string | undefined): Promise<string> {
  if (!tz || tz === "UTC") return "UTC";
  let known = zones.get(tz);
  if (known === undefined) {
    try {
      await sql(`SELECT now() AT TIME ZONE $1 AS t`, [tz]);
      known = true;
    } catch (err) {
      if ((err as { code?: string }).code !== "22023") throw err;
      known = false;
    }
    if (zones.size > 500) zones.clear();
    zones.set(tz, known);
  }
  return known ? tz : "UTC";
}

interface LineRow {
  id: string;
  handle: string;
  label: string | null;
  provider: string;
  status: LineStatus;
  statusReason: string | null;
  statusChangedAt: Date | null;
  isSandbox: boolean;
}

/** A restricted key's lines only, and the shared sandbox line. */
async function visibleLines(actor: Actor): Promise<LineRow[]> {
  const rows = await sql<LineRow>(
    `SELECT id, handle, label, platform AS provider, status, "statusReason", "statusChangedAt", "isSandbox"
     FROM "Line" WHERE "accountId" = $1 OR "isSandbox" ORDER BY "isSandbox", "createdAt", id`,
    [actor.accountId],
  );
  return rows.filter((l) => l.isSandbox || !actor.lineIds || actor.lineIds.has(l.id));
}

async function days({ now, tz }: DayWindow): Promise<string[]> {
  const rows = await sql<{ day: string }>(`WITH ${DAYS_CTE} SELECT to_char(day, 'YYYY-MM-DD') AS day FROM days ORDER BY day`, [now, tz]);
  return rows.map((r) => r.day);
}

interface MessageRow {
  day: string;
  line_id: string;
  sent: number;
  received: number;
}

/** The account's rows only, on the sandbox line too. */
function messageCounts(w: DayWindow, accountId: string, lineIds: string[]): Promise<MessageRow[]> {
  return sql<MessageRow>(
    `WITH ${DAYS_CTE}
     SELECT to_char(${bucket(`m."sentAt"`)}, 'YYYY-MM-DD') AS day, m."lineId" AS line_id,
            count(*) FILTER (WHERE m."isFromMe")::int AS sent, count(*) FILTER (WHERE NOT m."isFromMe")::int AS received
     FROM "Message" m
     WHERE m."lineId" = ANY($3::text[]) AND m."accountId" = $4 AND m."sentAt" >= ${SINCE} AND m."sentAt" < ${UNTIL}
     GROUP BY 1, 2`,
    [w.now, w.tz, lineIds, accountId],
  );
}

interface DeliveryRow {
  day: string;
  sent: number;
  delivered: number;
  undelivered: number;
  failed: number;
}

function deliveryCounts(w: DayWindow, accountId: string, lineIds: string[] | null): Promise<DeliveryRow[]> {
  return sql<DeliveryRow>(
    `WITH ${DAYS_CTE}
     SELECT to_char(${bucket(`o."completedAt"`)}, 'YYYY-MM-DD') AS day,
            count(*) FILTER (WHERE o.status = 'sent' AND coalesce(m."deliveryStatus", 'sent') NOT IN ('delivered', 'undelivered', 'failed'))::int AS sent,
            count(*) FILTER (WHERE o.status = 'sent' AND m."deliveryStatus" = 'delivered')::int AS delivered,
            count(*) FILTER (WHERE o.status = 'sent' AND m."deliveryStatus" IN ('undelivered', 'failed'))::int AS undelivered,
            count(*) FILTER (WHERE o.status = 'failed')::int AS failed
     FROM "OutboxItem" o LEFT JOIN "Message" m ON m."outboxId" = o.id
     WHERE o."accountId" = $3 AND o."completedAt" >= ${SINCE} AND o."completedAt" < ${UNTIL}
       AND o.kind = 'message' AND o.status IN ('sent', 'failed') AND ($4::text[] IS NULL OR o."lineId" = ANY($4::text[]))
     GROUP BY 1`,
    [w.now, w.tz, accountId, lineIds],
  );
}

interface WebhookRow {
  day: string;
  succeeded: number;
  failed: number;
  retrying: number;
}

function webhookCounts(w: DayWindow, accountId: string, lineIds: string[] | null): Promise<WebhookRow[]> {
  return sql<WebhookRow>(
    `WITH ${DAYS_CTE}
     SELECT to_char(${bucket(`d."createdAt"`)}, 'YYYY-MM-DD') AS day,
            count(*) FILTER (WHERE d.status = 'succeeded')::int AS succeeded,
            count(*) FILTER (WHERE d.status = 'failed')::int AS failed,
            count(*) FILTER (WHERE d.status IN ('pending', 'delivering') AND d.attempts > 0)::int AS retrying
     FROM "WebhookDelivery" d
     WHERE d."webhookId" IN (SELECT id FROM "Webhook" WHERE "accountId" = $3 AND kind = 'http' AND ($4::text[] IS NULL OR "lineId" = ANY($4::text[])))
       AND d.status IN ('pending', 'delivering', 'succeeded', 'failed') AND d."createdAt" >= ${SINCE} AND d."createdAt" < ${UNTIL}
     GROUP BY 1`,
    [w.now, w.tz, accountId, lineIds],
  );
}

interface HealthRow {
  day: string;
  line_id: string;
  worst: LineStatus | null;
  changes: number;
}

// The status at a moment is the previous status of the first change after it, or the current one when none came after;
// a day's worst is the worse of its status at the start and every status it changed to.
function healthDays(w: DayWindow, accountId: string, lineIds: string[]): Promise<HealthRow[]> {
  return sql<HealthRow>(
    `WITH ${DAYS_CTE},
     lines AS (SELECT id, status, "createdAt" FROM "Line" WHERE id = ANY($3::text[]) AND "accountId" = $4),
     changes AS MATERIALIZED (
       SELECT c."lineId", c.status, c."previousStatus", c.at, c.id FROM "LineStatusChange" c
       WHERE c."accountId" = $4 AND c.at >= ${SINCE}
     ),
     cells AS (
       SELECT d.day, l.id AS line_id, l."createdAt" < d.day_end AS existed,
              coalesce((SELECT c."previousStatus" FROM changes c WHERE c."lineId" = l.id AND c.at >= d.day_start ORDER BY c.at, c.id LIMIT 1), l.status) AS at_start,
              ARRAY(SELECT c.status FROM changes c WHERE c."lineId" = l.id AND c.at >= d.day_start AND c.at < d.day_end) AS during
       FROM days d CROSS JOIN lines l
     )
     SELECT to_char(day, 'YYYY-MM-DD') AS day, line_id, cardinality(during)::int AS changes,
            CASE WHEN existed THEN (SELECT s FROM unnest(array_append(during, at_start)) AS s
                                    ORDER BY CASE s WHEN 'disconnected' THEN 0 WHEN 'degraded' THEN 1 ELSE 2 END LIMIT 1) END AS worst
     FROM cells`,
    [w.now, w.tz, lineIds, accountId],
  );
}

interface FailingWebhookRow {
  id: string;
  url: string;
  line_id: string;
  is_active: boolean;
  disabled_reason: string | null;
  failing_since: Date | null;
  failed_recently: number;
  last_error: string | null;
}

const RECENT_FAILURES_MS = 7 * 86_400_000;

function failingWebhooks(now: Date, accountId: string, lineIds: string[] | null): Promise<FailingWebhookRow[]> {
  return sql<FailingWebhookRow>(
    `SELECT w.id, w.url, w."lineId" AS line_id, w."isActive" AS is_active, w."disabledReason" AS disabled_reason,
            w."failingSince" AS failing_since, coalesce(f.n, 0)::int AS failed_recently, f.last_error
     FROM "Webhook" w
     LEFT JOIN LATERAL (
       SELECT count(*) AS n, (array_agg(d."lastError" ORDER BY d."completedAt" DESC))[1] AS last_error
       FROM "WebhookDelivery" d
       WHERE d."webhookId" = w.id AND d.status = 'failed' AND d."createdAt" >= $2::timestamptz - interval '14 days' AND d."completedAt" >= $2
     ) f ON true
     WHERE w."accountId" = $1 AND w.kind = 'http' AND ($3::text[] IS NULL OR w."lineId" = ANY($3::text[]))
       AND (NOT w."isActive" OR w."failingSince" IS NOT NULL OR f.n > 0)
     ORDER BY w."isActive", w.id`,
    [accountId, new Date(now.getTime() - RECENT_FAILURES_MS), lineIds],
  );
}

interface SetupRow {
  has_line: boolean;
  has_provider_line: boolean;
  has_key: boolean;
  has_message: boolean;
  has_webhook: boolean;
}

function setupSteps(accountId: string): Promise<SetupRow[]> {
  return sql<SetupRow>(
    `SELECT EXISTS (SELECT 1 FROM "Line" WHERE "accountId" = $1 AND NOT "isSandbox") AS has_line,
            EXISTS (SELECT 1 FROM "Line" WHERE "accountId" = $1 AND NOT "isSandbox" AND platform <> 'simulated') AS has_provider_line,
            EXISTS (SELECT 1 FROM "ApiKey" WHERE "accountId" = $1 AND "revokedAt" IS NULL) AS has_key,
            EXISTS (SELECT 1 FROM "Message" WHERE "accountId" = $1) AS has_message,
            EXISTS (SELECT 1 FROM "Webhook" WHERE "accountId" = $1 AND kind = 'http') AS has_webhook`,
    [accountId],
  );
}

const rate = (good: number, total: number) => (total ? good / total : null);

function byDay<R extends { day: string }>(rows: R[], dayList: string[], zero: Omit<R, "day">): R[] {
  const found = new Map(rows.map((r) => [r.day, r]));
  return dayList.map((day) => found.get(day) ?? ({ ...zero, day } as R));
}

export async function overviewStats(actor: Actor, input: z.output<typeof OverviewStatsQuery>, now = new Date()) {
  const w: DayWindow = { now, tz: await knownZone(input.time_zone) };
  const lines = await visibleLines(actor);
  const own = lines.filter((l) => !l.isSandbox);
  const restricted = actor.lineIds ? lines.map((l) => l.id) : null;
  const [dayList, messages, delivery, webhooks, health, failing, [setup]] = await Promise.all([
    days(w),
    messageCounts(w, actor.accountId, lines.map((l) => l.id)),
    deliveryCounts(w, actor.accountId, restricted),
    webhookCounts(w, actor.accountId, restricted),
    healthDays(w, actor.accountId, own.map((l) => l.id)),
    failingWebhooks(now, actor.accountId, restricted),
    setupSteps(actor.accountId),
  ]);
  const index = new Map(dayList.map((d, i) => [d, i]));
  const perLine = new Map<string, { sent: number[]; received: number[] }>();
  for (const row of messages) {
    const i = index.get(row.day);
    if (i === undefined) continue;
    let series = perLine.get(row.line_id);
    if (!series) perLine.set(row.line_id, (series = { sent: dayList.map(() => 0), received: dayList.map(() => 0) }));
    series.sent[i] = row.sent;
    series.received[i] = row.received;
  }
  const healthOf = new Map(own.map((l) => [l.id, dayList.map((): LineStatus | null => null)]));
  const changesOf = new Map(own.map((l) => [l.id, dayList.map(() => 0)]));
  for (const row of health) {
    const i = index.get(row.day);
    if (i === undefined) continue;
    healthOf.get(row.line_id)![i] = row.worst;
    changesOf.get(row.line_id)![i] = row.changes;
  }
  const simulator = simulatorEnabled();
  return {
    object: "overview_stats" as const,
    time_zone: w.tz,
    days: dayList,
    lines: lines
      .filter((l) => !l.isSandbox || perLine.has(l.id))
      .map((l) => ({
        id: l.id,
        handle: l.handle,
        label: l.label,
        provider: l.provider,
        is_sandbox: l.isSandbox,
        status: l.status,
        status_reason: l.statusReason,
        status_changed_at: l.statusChangedAt?.getTime() ?? null,
      })),
    messages: [...perLine].map(([line_id, s]) => ({ line_id, ...s })),
    delivery: byDay(delivery, dayList, { sent: 0, delivered: 0, undelivered: 0, failed: 0 }).map((r) => ({
      ...r,
      rate: rate(r.sent + r.delivered, r.sent + r.delivered + r.undelivered + r.failed),
    })),
    webhooks: byDay(webhooks, dayList, { succeeded: 0, failed: 0, retrying: 0 }).map((r) => ({
      ...r,
      rate: rate(r.succeeded, r.succeeded + r.failed + r.retrying),
    })),
    health: own.map((l) => ({ line_id: l.id, statuses: healthOf.get(l.id)!, changes: changesOf.get(l.id)! })),
    attention: {
      lines: own
        .filter((l) => l.status !== "connected")
        .map((l) => ({ id: l.id, handle: l.handle, label: l.label, provider: l.provider, status: l.status, reason: l.statusReason, since: l.statusChangedAt?.getTime() ?? null })),
      webhooks: failing.map((f) => ({
        id: f.id,
        url: f.url,
        line_id: f.line_id,
        is_active: f.is_active,
        disabled_reason: f.disabled_reason,
        failing_since: f.failing_since?.getTime() ?? null,
        failed_recently: f.failed_recently,
        last_error: f.last_error,
      })),
    },
    setup: {
      simulator_enabled: simulator,
      // With the simulator off, a line counts once it is connected to a real provider.
      line: simulator ? setup!.has_line : setup!.has_provider_line,
      key: setup!.has_key,
      message: setup!.has_message,
      webhook: setup!.has_webhook,
    },
  };
}

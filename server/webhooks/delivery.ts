import { config } from "../kernel/config";
import { batcher } from "../kernel/batcher";
import { sql, valuesList } from "../db";
import { leasedQueue } from "../db/leased-queue";
import type { Webhook, WebhookDelivery } from "../generated/prisma/client";
import { newId } from "../kernel/ids";
import { storableText } from "../db/storable";
import { fileUrlSigner } from "../storage/signed-urls";
import { MAX_IN_FLIGHT_PER_WEBHOOK, postWebhook, type PostResult } from "./http-post";
import { signWebhook } from "./signing";
import type { HandedDelivery } from "./handoff";
import { log } from "../kernel/log";
import { metrics } from "../observability/metrics";

/** Before ±20% jitter: the schedule docs/api.md publishes. */
const RETRY_SCHEDULE_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];
const DISABLE_AFTER_MS = 5 * 24 * 3_600_000;
/** Claimed with a lease (longer than the 15 s response deadline plus recording): a worker that dies mid-attempt delays a retry by at most that. */
const queue = leasedQueue<WebhookDelivery>({ table: "WebhookDelivery", claimedStatus: "delivering", dueColumn: "nextAttemptAt" });
const RESPONSE_TIMEOUT_MS = 15_000;

function retryDelayMs(attempt: number, retryAfterMs: number | null = null): number | null {
  const base = RETRY_SCHEDULE_MS[attempt - 1];
  if (base === undefined) return null;
  const jittered = Math.round(base * (0.8 + Math.random() * 0.4));
  return retryAfterMs !== null ? Math.max(jittered, retryAfterMs) : jittered;
}

/** Never the body or the secret. */
function noteAttempts(outcomes: Outcome[]): void {
  const m = metrics();
  for (const { delivery, result } of outcomes) {
    const outcome = result.ok ? "succeeded" : result.gone || retryDelayMs(delivery.attempts) === null ? "failed" : "retry";
    m.webhookDeliveries.inc({ outcome });
    m.webhookAttemptDuration.observe({ outcome }, result.durationMs / 1000);
    const record = { delivery_id: delivery.id, webhook_id: delivery.webhookId, event: delivery.event, attempt: delivery.attempts, outcome, status_code: result.statusCode, duration_ms: result.durationMs };
    if (result.ok) log().info(record, "webhook attempt");
    else log().warn({ ...record, error: result.error ?? undefined }, "webhook attempt");
  }
}

/** Keeps each webhook under MAX_IN_FLIGHT_PER_WEBHOOK deliveries in flight (claimed and not recorded). */
export function claimDeliveries(limit: number, now = new Date()): Promise<WebhookDelivery[]> {
  return queue.claim({
    with: `busy AS (
       SELECT "webhookId", count(*) AS n FROM "WebhookDelivery" WHERE status = 'delivering' GROUP BY "webhookId"
     ), due AS (
       SELECT d.id, d."webhookId", d."nextAttemptAt" FROM "WebhookDelivery" d
       JOIN "Webhook" w ON w.id = d."webhookId" AND w."isActive" AND w.kind = 'http'
       WHERE d.status = 'pending' AND d."nextAttemptAt" <= $2 AND d."webhookId" NOT IN (SELECT "webhookId" FROM busy WHERE n >= $4)
       ORDER BY d."nextAttemptAt", d.id LIMIT $3 * 4
     ), eligible AS (
       SELECT d.id FROM (
         SELECT due.id, row_number() OVER (PARTITION BY due."webhookId" ORDER BY due."nextAttemptAt", due.id) + coalesce(b.n, 0) AS slot
         FROM due LEFT JOIN busy b ON b."webhookId" = due."webhookId"
       ) d WHERE d.slot <= $4
     )`,
    candidates: `SELECT id FROM "WebhookDelivery" WHERE id IN (SELECT id FROM eligible) AND status = 'pending'
       ORDER BY "nextAttemptAt", id LIMIT $3 FOR UPDATE SKIP LOCKED`,
    params: [now, limit, MAX_IN_FLIGHT_PER_WEBHOOK],
    now,
  });
}

/** The receiver may see a delivery ID twice. `all`: every claim, for a process that owns the database alone (embedded PGlite) at start. */
export const releaseExpiredDeliveries = (now = new Date(), { all = false } = {}): Promise<number> =>
  queue.release(all ? { all: true } : { expiredBefore: now });

export const releaseDeliveries = (ids: string[]): Promise<number> => queue.release({ ids });

export const nextDeliveryDueAt = (): Promise<Date | null> =>
  queue.nextDue({ join: `JOIN "Webhook" w ON w.id = t."webhookId"`, where: `w."isActive" AND w.kind = 'http'` });

const hasAttachments = (data: Record<string, unknown>) => Array.isArray(data.attachments) && data.attachments.length > 0;

/** Attachment URLs are signed afresh, since a retry may come hours later. */
export function renderBody(delivery: WebhookDelivery | HandedDelivery, url: (fileId: string) => string, timestamp: number): string {
  const payload = delivery.payload as Record<string, unknown>;
  if ("payloadJson" in delivery && !hasAttachments(payload)) {
    // What JSON.stringify of the object below gives, around the data the fan-out serialized already.
    return `{"event":${JSON.stringify(delivery.event)},"data":${delivery.payloadJson},"timestamp":${timestamp},"delivery_id":${JSON.stringify(delivery.id)}}`;
  }
  const data = structuredClone(payload);
  if (Array.isArray(data.attachments)) {
    for (const a of data.attachments as { file_id?: string; url?: string }[]) if (a.file_id) a.url = url(a.file_id);
  }
  return JSON.stringify({ event: delivery.event, data, timestamp, delivery_id: delivery.id });
}

function secretsOf(webhook: Webhook, now: number): string[] {
  const previousValid = webhook.previousSecret && webhook.previousSecretExpiresAt && webhook.previousSecretExpiresAt.getTime() > now;
  return previousValid ? [webhook.previousSecret!] : [];
}

interface Outcome {
  delivery: WebhookDelivery;
  startedAt: Date;
  result: PostResult;
}

/** Column arrays of `rows`, for `unnest`: a statement's text and parameter count do not grow with the batch. */
function columns(rows: unknown[][], width: number): unknown[][] {
  return Array.from({ length: width }, (_, i) => rows.map((r) => r[i]));
}

// One statement (its own transaction): the attempts logged, the deliveries moved on, and the
// webhooks whose failing streak starts or ends, or that are disabled, changed. A healthy
// webhook's row is not rewritten on every batch.
const RECORD_OUTCOMES = `WITH attempts AS (
    -- A delivery deleted meanwhile (its webhook was deleted) has nothing left to log to.
    INSERT INTO "WebhookAttempt" (id, "deliveryId", "startedAt", "durationMs", "statusCode", "responseBody", error)
    SELECT v.* FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::int[], $5::int[], $6::text[], $7::text[])
      AS v(id, delivery_id, started_at, duration_ms, status_code, body, error)
    WHERE EXISTS (SELECT 1 FROM "WebhookDelivery" d WHERE d.id = v.delivery_id)
  ), deliveries AS (
    UPDATE "WebhookDelivery" d SET status = v.status, "leaseExpiresAt" = NULL, "lastStatusCode" = v.code, "lastError" = v.error,
      "nextAttemptAt" = coalesce(v.next, d."nextAttemptAt"), "completedAt" = v.completed
    FROM unnest($8::text[], $9::text[], $10::int[], $11::text[], $12::timestamptz[], $13::timestamptz[]) AS v(id, status, code, error, next, completed)
    WHERE d.id = v.id
  ), webhooks AS (
    UPDATE "Webhook" w SET
      "failingSince" = CASE WHEN v.ok THEN NULL ELSE coalesce(w."failingSince", v.fail_start) END,
      "isActive" = w."isActive" AND NOT v.gone AND (v.ok OR coalesce(w."failingSince", v.fail_start) >= $18),
      "disabledReason" = CASE
        WHEN NOT w."isActive" THEN w."disabledReason"
        WHEN v.gone THEN 'the endpoint answered 410 Gone'
        WHEN NOT v.ok AND coalesce(w."failingSince", v.fail_start) < $18 THEN 'deliveries failed continuously for 5 days'
        ELSE w."disabledReason" END
    FROM unnest($14::text[], $15::boolean[], $16::timestamptz[], $17::boolean[]) AS v(id, ok, fail_start, gone)
    WHERE w.id = v.id AND (v.ok <> (w."failingSince" IS NULL) OR v.gone OR (NOT v.ok AND w."failingSince" < $18))
  )
  SELECT 1`;

async function recordOutcomes(outcomes: Outcome[]): Promise<void> {
  const now = new Date();
  noteAttempts(outcomes);
  const attempts = outcomes.map(({ delivery, startedAt, result }) => [
    newId("attempt"),
    delivery.id,
    startedAt,
    result.durationMs,
    result.statusCode,
    storableText(result.responseExcerpt),
    storableText(result.error),
  ]);
  const deliveries = outcomes.map(({ delivery, result }) => {
    const retryIn = result.ok || result.gone ? null : retryDelayMs(delivery.attempts, result.retryAfterMs);
    const status = result.ok ? "succeeded" : retryIn === null ? "failed" : "pending";
    return [
      delivery.id,
      status,
      result.statusCode,
      result.ok ? null : storableText(result.error ?? `HTTP ${result.statusCode}`),
      retryIn === null ? null : new Date(now.getTime() + retryIn),
      status === "pending" ? null : now,
    ];
  });
  const streaks = new Map<string, { ok: boolean; last: number; failStart: Date | null; gone: boolean }>();
  for (const { delivery, startedAt, result } of outcomes) {
    const s = streaks.get(delivery.webhookId) ?? { ok: true, last: -1, failStart: null, gone: false };
    const end = startedAt.getTime() + result.durationMs;
    if (end >= s.last) [s.ok, s.last] = [result.ok, end];
    if (!result.ok && (!s.failStart || startedAt < s.failStart)) s.failStart = startedAt;
    s.gone ||= result.gone;
    streaks.set(delivery.webhookId, s);
  }
  const webhooks = [...streaks].map(([id, s]) => [id, s.ok && !s.gone, s.failStart ?? now, s.gone]);
  await sql(RECORD_OUTCOMES, [
    ...columns(attempts, 7),
    ...columns(deliveries, 6),
    ...columns(webhooks, 4),
    new Date(now.getTime() - DISABLE_AFTER_MS),
  ]);
}

const recordOutcome = batcher<Outcome, void>(async (outcomes) => {
  await recordOutcomes(outcomes);
  return outcomes.map(() => undefined);
}, { max: 500, lingerMs: 2 });

// An attempt whose recording failed still counts, so the delivery follows the retry schedule and auto-disable instead of
// being retried at once forever: recorded again without the reply; failing that, put back on the schedule; then the lease runs out.
async function recordUnrecordable(delivery: WebhookDelivery, startedAt: Date, sent: PostResult | null): Promise<void> {
  const result: PostResult = {
    ok: sent?.ok ?? false,
    statusCode: sent?.statusCode ?? null,
    durationMs: sent?.durationMs ?? Date.now() - startedAt.getTime(),
    responseExcerpt: null,
    error: sent?.ok ? null : `the attempt could not be recorded${sent?.statusCode ? ` (HTTP ${sent.statusCode})` : ""}`,
    retryAfterMs: sent?.retryAfterMs ?? null,
    gone: sent?.gone ?? false,
  };
  try {
    await recordOutcomes([{ delivery, startedAt, result }]);
  } catch (err) {
    if ((err as { code?: string }).code === "23503") return;
    const retryIn = result.ok ? null : retryDelayMs(delivery.attempts);
    await sql(
      `UPDATE "WebhookDelivery" SET status = $2, "leaseExpiresAt" = NULL, "nextAttemptAt" = coalesce($3, "nextAttemptAt"),
         "completedAt" = CASE WHEN $2 = 'pending' THEN NULL ELSE now() END, "lastError" = $4 WHERE id = $1`,
      [delivery.id, result.ok ? "succeeded" : retryIn === null ? "failed" : "pending", retryIn === null ? null : new Date(Date.now() + retryIn), result.error],
    ).catch(() => undefined);
  }
}

/** `onSettled` is called as each delivery finishes (the embedded sender frees its slot then). */
export async function deliverWebhooks(deliveries: WebhookDelivery[], onSettled?: (delivery: WebhookDelivery) => void): Promise<void> {
  if (!deliveries.length) return;
  let webhooks: Map<string, Webhook>;
  let url: (fileId: string) => string;
  try {
    // Handed deliveries carry their webhook as the fan-out read it, in the transaction that wrote them.
    webhooks = new Map(deliveries.flatMap((d) => ("webhook" in d ? [[d.webhookId, d.webhook as Webhook]] : [])));
    const unread = [...new Set(deliveries.map((d) => d.webhookId).filter((id) => !webhooks.has(id)))];
    if (unread.length) {
      const ids = valuesList([unread]);
      for (const w of await sql<Webhook>(`SELECT * FROM "Webhook" WHERE id IN ${ids.text}`, ids.params)) webhooks.set(w.id, w);
    }
    url = await fileUrlSigner();
  } catch (err) {
    // Nothing was sent: the claims' leases run out and the deliveries are tried again.
    if (onSettled) deliveries.forEach((d) => onSettled(d));
    throw err;
  }
  const allowInsecure = config().webhookAllowInsecure;
  await Promise.all(
    deliveries.map(async (delivery) => {
      try {
        const webhook = webhooks.get(delivery.webhookId);
        if (!webhook) return; // deleted meanwhile: its deliveries went with it
        const startedAt = new Date();
        let result: PostResult | null = null;
        try {
          const timestamp = startedAt.getTime();
          const rawBody = renderBody(delivery, url, timestamp);
          const headers = signWebhook({ secret: webhook.secret, secrets: secretsOf(webhook, timestamp), rawBody, timestamp, deliveryId: delivery.id });
          result = await postWebhook(webhook.url, rawBody, headers, { timeoutMs: RESPONSE_TIMEOUT_MS, allowInsecure });
          await recordOutcome({ delivery, startedAt, result });
        } catch (err) {
          // The webhook was deleted during the attempt: nothing left to record.
          if ((err as { code?: string }).code === "23503") return;
          log().error({ err, delivery_id: delivery.id }, "a webhook attempt could not be recorded");
          await recordUnrecordable(delivery, startedAt, result);
        }
      } finally {
        onSettled?.(delivery);
      }
    }),
  );
}

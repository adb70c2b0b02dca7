import { config } from "../config";
import { getDb, sql, valuesList } from "../db";
import type { Webhook, WebhookDelivery } from "../generated/prisma/client";
import { newId } from "../ids";
import { fileUrlSigner } from "../storage/signed-urls";
import { postWebhook, type PostResult } from "./http-post";
import { signWebhook } from "./signing";

// Delivering webhook rows, Svix-style: claim due deliveries with a lease, POST each signed
// body, log every attempt, and retry on the published schedule until one attempt answers 2xx.
// 410 Gone disables the webhook; so do 5 days of continuous failure.

/** Waits after failed attempt n (1-based), before ±20% jitter: the schedule README publishes. */
export const RETRY_SCHEDULE_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];
export const DISABLE_AFTER_MS = 5 * 24 * 3_600_000;
const LEASE_MS = 60_000;
const RESPONSE_TIMEOUT_MS = 15_000;

export function retryDelayMs(attempt: number, retryAfterMs: number | null = null): number | null {
  const base = RETRY_SCHEDULE_MS[attempt - 1];
  if (base === undefined) return null;
  const jittered = Math.round(base * (0.8 + Math.random() * 0.4));
  return retryAfterMs !== null ? Math.max(jittered, retryAfterMs) : jittered;
}

/** Atomically claims up to `limit` due deliveries of active webhooks. */
export async function claimDeliveries(limit: number, now = new Date()): Promise<WebhookDelivery[]> {
  return sql<WebhookDelivery>(
    `UPDATE "WebhookDelivery" SET status = 'delivering', "leaseExpiresAt" = $1, attempts = attempts + 1
     WHERE id IN (
       SELECT d.id FROM "WebhookDelivery" d JOIN "Webhook" w ON w.id = d."webhookId"
       WHERE d.status = 'pending' AND d."nextAttemptAt" <= $2 AND w."isActive"
       ORDER BY d."nextAttemptAt", d.id LIMIT $3 FOR UPDATE OF d SKIP LOCKED)
     RETURNING *`,
    [new Date(now.getTime() + LEASE_MS), now, limit],
  );
}

/** Deliveries whose worker died mid-attempt go back to pending (the receiver may see the ID twice). */
export async function releaseExpiredDeliveries(now = new Date()): Promise<number> {
  const rows = await sql<{ id: string }>(
    `UPDATE "WebhookDelivery" SET status = 'pending', "leaseExpiresAt" = NULL WHERE status = 'delivering' AND "leaseExpiresAt" < $1 RETURNING id`,
    [now],
  );
  return rows.length;
}

export async function nextDeliveryDueAt(): Promise<Date | null> {
  const [row] = await sql<{ at: Date | null }>(
    `SELECT min(d."nextAttemptAt") AS at FROM "WebhookDelivery" d JOIN "Webhook" w ON w.id = d."webhookId" WHERE d.status = 'pending' AND w."isActive"`,
  );
  return row?.at ?? null;
}

/** The body a receiver gets; attachment URLs are signed afresh, since a retry may come hours later. */
function renderBody(delivery: WebhookDelivery, url: (fileId: string) => string, timestamp: number): string {
  const data = structuredClone(delivery.payload) as Record<string, unknown>;
  if (Array.isArray(data.attachments)) {
    for (const a of data.attachments as { file_id?: string; url?: string }[]) if (a.file_id) a.url = url(a.file_id);
  }
  return JSON.stringify({ event: delivery.event, data, timestamp, delivery_id: delivery.id });
}

function secretsOf(webhook: Webhook, now: number): string[] {
  const previousValid = webhook.previousSecret && webhook.previousSecretExpiresAt && webhook.previousSecretExpiresAt.getTime() > now;
  return previousValid ? [webhook.previousSecret!] : [];
}

async function record(delivery: WebhookDelivery, webhook: Webhook, startedAt: Date, result: PostResult): Promise<void> {
  const db = await getDb();
  const now = new Date();
  const excerpt = result.responseExcerpt;
  const retryIn = result.ok || result.gone ? null : retryDelayMs(delivery.attempts, result.retryAfterMs);
  const status = result.ok ? "succeeded" : retryIn === null ? "failed" : "pending";
  const failingSince = result.ok ? null : (webhook.failingSince ?? startedAt);
  const disable = result.gone
    ? "the endpoint answered 410 Gone"
    : !result.ok && now.getTime() - failingSince!.getTime() > DISABLE_AFTER_MS
      ? "deliveries failed continuously for 5 days"
      : null;
  await db.$transaction([
    db.webhookAttempt.create({
      data: {
        id: newId("attempt"),
        deliveryId: delivery.id,
        startedAt,
        durationMs: result.durationMs,
        statusCode: result.statusCode,
        responseBody: excerpt,
        error: result.error,
      },
    }),
    db.webhookDelivery.update({
      where: { id: delivery.id },
      data: {
        status,
        leaseExpiresAt: null,
        lastStatusCode: result.statusCode,
        lastError: result.ok ? null : (result.error ?? `HTTP ${result.statusCode}`),
        ...(retryIn !== null ? { nextAttemptAt: new Date(now.getTime() + retryIn) } : {}),
        ...(status !== "pending" ? { completedAt: now } : {}),
      },
    }),
    db.webhook.updateMany({
      where: { id: webhook.id },
      data: { failingSince, ...(disable ? { isActive: false, disabledReason: disable } : {}) },
    }),
  ]);
}

/** POSTs each claimed delivery to its webhook and records the attempt. */
export async function deliverWebhooks(deliveries: WebhookDelivery[]): Promise<void> {
  if (!deliveries.length) return;
  const db = await getDb();
  const ids = valuesList([[...new Set(deliveries.map((d) => d.webhookId))]]);
  const webhooks = new Map(
    (await sql<Webhook>(`SELECT * FROM "Webhook" WHERE id IN ${ids.text}`, ids.params)).map((w) => [w.id, w]),
  );
  const url = await fileUrlSigner();
  const allowInsecure = config().webhookAllowInsecure;
  await Promise.all(
    deliveries.map(async (delivery) => {
      const webhook = webhooks.get(delivery.webhookId);
      if (!webhook) return; // deleted meanwhile: its deliveries went with it
      const startedAt = new Date();
      try {
        const timestamp = startedAt.getTime();
        const rawBody = renderBody(delivery, url, timestamp);
        const headers = signWebhook({ secret: webhook.secret, secrets: secretsOf(webhook, timestamp), rawBody, timestamp, deliveryId: delivery.id });
        const result = await postWebhook(webhook.url, rawBody, headers, { timeoutMs: RESPONSE_TIMEOUT_MS, allowInsecure });
        await record(delivery, webhook, startedAt, result);
      } catch (err) {
        console.error(`[webhooks] delivery ${delivery.id} failed unexpectedly`, err);
        await db.webhookDelivery
          .update({ where: { id: delivery.id }, data: { status: "pending", leaseExpiresAt: null, nextAttemptAt: new Date(Date.now() + 5_000) } })
          .catch(() => undefined);
      }
    }),
  );
}

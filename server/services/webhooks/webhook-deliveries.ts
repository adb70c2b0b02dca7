import { z } from "zod";
import type { Actor } from "../access/actor";
import { getDb, sql } from "../../db";
import { ApiError, invalidParam } from "../../kernel/errors";
import type { WebhookAttempt, WebhookDelivery } from "../../generated/prisma/client";
import { keysetDesc, type Page, PageQuery, toPage } from "../../wire/pagination";
import { serializeWebhook } from "../../wire/serializers";
import { newWebhookSecret } from "../../webhooks/signing";
import { fire } from "../../kernel/signals";
import { requireIdKind } from "../access/id-params";
import { findWebhook } from "./webhooks";

export const DELIVERY_STATUSES = ["pending", "delivering", "succeeded", "failed"] as const;
const PREVIOUS_SECRET_TTL_MS = 24 * 3_600_000;

const ms = (d: Date | null) => (d ? d.getTime() : null);

function serializeAttempt(a: WebhookAttempt) {
  return {
    started_at: a.startedAt.getTime(),
    duration_ms: a.durationMs,
    status_code: a.statusCode,
    response_excerpt: a.responseBody,
    error: a.error,
  };
}

export function serializeDelivery(d: WebhookDelivery, attempts?: WebhookAttempt[]) {
  return {
    object: "webhook_delivery" as const,
    id: d.id,
    webhook_id: d.webhookId,
    event: d.event,
    status: d.status,
    attempts: d.attempts,
    next_attempt_at: d.status === "pending" ? d.nextAttemptAt.getTime() : null,
    last_status_code: d.lastStatusCode,
    last_error: d.lastError,
    created_at: d.createdAt.getTime(),
    completed_at: ms(d.completedAt),
    ...(attempts ? { data: d.payload, attempt_log: attempts.map(serializeAttempt) } : {}),
  };
}

export const ListDeliveriesQuery = PageQuery.extend({
  id: z.string().trim().max(100).optional().describe("One delivery (dlv_ ID), with its data and every attempt"),
  webhook_id: z.string().trim().max(100).optional().describe("The webhook whose deliveries to list"),
  status: z.enum(DELIVERY_STATUSES).optional(),
});

export async function findDelivery(actor: Actor, id: string) {
  const notFound = () => new ApiError("delivery_not_found", `No webhook delivery with ID '${id}'.`, { param: "id" });
  requireIdKind("delivery", id, "id");
  const db = await getDb();
  const delivery = await db.webhookDelivery.findUnique({ where: { id }, include: { webhook: { select: { accountId: true } } } });
  if (!delivery || delivery.webhook.accountId !== actor.accountId) throw notFound();
  await findWebhook(actor, delivery.webhookId, "id"); // line restriction of the key
  return delivery;
}

export async function getDelivery(actor: Actor, id: string) {
  const delivery = await findDelivery(actor, id);
  const db = await getDb();
  const attempts = await db.webhookAttempt.findMany({ where: { deliveryId: delivery.id }, orderBy: { startedAt: "asc" } });
  return serializeDelivery(delivery, attempts) as ReturnType<typeof serializeDelivery> & { data: unknown; attempt_log: ReturnType<typeof serializeAttempt>[] };
}

export async function listWebhookDeliveries(actor: Actor, input: z.output<typeof ListDeliveriesQuery> & { webhook_id: string }) {
  const webhook = await findWebhook(actor, input.webhook_id, "webhook_id");
  const db = await getDb();
  const page = keysetDesc(null, input.cursor);
  const rows = await db.webhookDelivery.findMany({
    where: { webhookId: webhook.id, ...(input.status ? { status: input.status } : {}), ...page.where },
    orderBy: page.orderBy,
    take: input.limit + 1,
  });
  return toPage(rows, input.limit, (d) => serializeDelivery(d), (d) => [d.id]) as Page<ReturnType<typeof serializeDelivery>>;
}

export async function listDeliveries(actor: Actor, input: z.output<typeof ListDeliveriesQuery>) {
  if (input.id) return getDelivery(actor, input.id);
  if (!input.webhook_id) throw new ApiError("missing_required_parameter", "Pass webhook_id (or id for one delivery).", { param: "webhook_id" });
  return listWebhookDeliveries(actor, { ...input, webhook_id: input.webhook_id });
}

export const ResendBody = z.object({
  id: z.string().trim().max(100).optional(),
  /** Or every failing delivery of this webhook since `since`: those whose retries ran out and those waiting, brought forward to now. */
  webhook_id: z.string().trim().max(100).optional(),
  since: z.number().int().min(0).optional(),
});

/** The receiver sees the same delivery ID. */
export async function resendDeliveries(actor: Actor, input: z.output<typeof ResendBody>) {
  const db = await getDb();
  const again = { status: "pending", nextAttemptAt: new Date(), completedAt: null, leaseExpiresAt: null };
  let count: number;
  if (input.id) {
    const delivery = await findDelivery(actor, input.id);
    if (delivery.status === "delivering" || (delivery.status === "pending" && delivery.attempts === 0)) {
      throw invalidParam("id", `Delivery ${delivery.id} is ${delivery.status}: it is being sent already.`);
    }
    ({ count } = await db.webhookDelivery.updateMany({ where: { id: delivery.id, status: { not: "delivering" } }, data: again }));
  } else if (input.webhook_id) {
    const webhook = await findWebhook(actor, input.webhook_id, "webhook_id");
    if (input.since === undefined) throw new ApiError("missing_required_parameter", "Pass since (Unix ms) with webhook_id.", { param: "since" });
    // Rows the sender holds at this moment (being claimed or recorded) are skipped, not waited
    // for: they are being sent already, and waiting on them while holding others could deadlock.
    const rows = await sql<{ id: string }>(
      `UPDATE "WebhookDelivery" SET status = 'pending', "nextAttemptAt" = $3, "completedAt" = NULL, "leaseExpiresAt" = NULL
       WHERE id IN (
         SELECT id FROM "WebhookDelivery"
         WHERE "webhookId" = $1 AND "createdAt" >= $2 AND (status = 'failed' OR (status = 'pending' AND attempts >= 1))
         ORDER BY id FOR UPDATE SKIP LOCKED)
       RETURNING id`,
      [webhook.id, new Date(input.since), new Date()],
    );
    count = rows.length;
  } else {
    throw new ApiError("missing_required_parameter", "Pass id (one delivery) or webhook_id and since (failed deliveries).", { param: "id" });
  }
  fire("webhooks.due");
  return { object: "resend" as const, resent: count };
}

export const WebhookIdBody = z.object({ id: z.string().trim().min(1).max(100) });

/** A new secret, shown once; the old one keeps verifying (and signing) for 24 hours. */
export async function rotateWebhookSecret(actor: Actor, input: z.output<typeof WebhookIdBody>) {
  const webhook = await findWebhook(actor, input.id);
  const secret = newWebhookSecret();
  const db = await getDb();
  const updated = await db.webhook.update({
    where: { id: webhook.id },
    data: { secret, previousSecret: webhook.secret, previousSecretExpiresAt: new Date(Date.now() + PREVIOUS_SECRET_TTL_MS) },
  });
  return serializeWebhook(updated, { secret });
}

export async function enableWebhook(actor: Actor, input: z.output<typeof WebhookIdBody>) {
  const webhook = await findWebhook(actor, input.id);
  const db = await getDb();
  const updated = await db.webhook.update({ where: { id: webhook.id }, data: { isActive: true, disabledReason: null, failingSince: null } });
  fire("webhooks.due");
  return serializeWebhook(updated);
}

/** Events meanwhile are not recorded for it. */
export async function disableWebhook(actor: Actor, input: z.output<typeof WebhookIdBody>) {
  const webhook = await findWebhook(actor, input.id);
  const db = await getDb();
  const updated = await db.webhook.update({ where: { id: webhook.id }, data: { isActive: false, disabledReason: "disabled by the owner" } });
  return serializeWebhook(updated);
}

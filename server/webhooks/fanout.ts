import { chunkRows, type Query, valuesList } from "../db";
import { LEASE_MS } from "../db/leased-queue";
import type { Webhook } from "../generated/prisma/client";
import { newId } from "../kernel/ids";
import type { WebhookEvent } from "./event-names";
import { type HandedDelivery, localSender } from "./handoff";

// Written inside the transaction of the change that caused them. Rows are events × subscribers
// (thousands in an account), so they go in chunks under the protocol's parameter limit.

export interface WebhookEventData {
  /** The account whose webhooks hear it: lines like the sandbox are shared between accounts. */
  accountId: string;
  lineId: string;
  event: WebhookEvent;
  data: Record<string, unknown>;
}

/** `handed` receives the deliveries stored claimed for this process's sender (handoff.ts), to give it after the commit. */
export async function fanOut(query: Query, events: WebhookEventData[], handed: HandedDelivery[] = []): Promise<number> {
  if (!events.length) return 0;
  const lineIds = [...new Set(events.map((e) => e.lineId))];
  // Whole rows: the ones handed to this process's sender go with the deliveries.
  const hooks = await query<Webhook>(`SELECT * FROM "Webhook" WHERE "isActive" AND "lineId" = ANY($1::text[])`, [lineIds]);
  if (!hooks.length) return 0;
  const sender = localSender();
  const now = new Date();
  const lease = new Date(now.getTime() + LEASE_MS);
  const rows = events.flatMap((e) => {
    const subscribed = hooks.filter((h) => h.lineId === e.lineId && h.accountId === e.accountId && h.events.includes(e.event));
    const payload = subscribed.length ? JSON.stringify(e.data) : "";
    return subscribed.map((h) => {
      const id = newId("delivery");
      if (h.kind !== "http" || !sender?.reserve(h.id)) return [id, h.id, e.event, payload, "pending", 0, null];
      handed.push({
        id, webhookId: h.id, event: e.event, payload: e.data as HandedDelivery["payload"], payloadJson: payload, webhook: h, status: "delivering", attempts: 1,
        nextAttemptAt: now, leaseExpiresAt: lease, lastStatusCode: null, lastError: null, createdAt: now, completedAt: null,
      });
      return [id, h.id, e.event, payload, "delivering", 1, lease];
    });
  });
  for (const chunk of chunkRows(rows)) {
    const values = valuesList(chunk, ["", "", "", "::jsonb", "", "::int", "::timestamptz"]);
    await query(`INSERT INTO "WebhookDelivery" (id, "webhookId", event, payload, status, attempts, "leaseExpiresAt") VALUES ${values.text}`, values.params);
  }
  return rows.length;
}

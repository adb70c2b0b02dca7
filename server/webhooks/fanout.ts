import { chunkRows, type Query, valuesList } from "../db";
import { newId } from "../kernel/ids";
import type { WebhookEvent } from "./event-names";

// Written inside the transaction of the change that caused them. Rows are events × subscribers
// (thousands in an account), so they go in chunks under the protocol's parameter limit.

export interface WebhookEventData {
  /** The account whose webhooks hear it: lines like the sandbox are shared between accounts. */
  accountId: string;
  lineId: string;
  event: WebhookEvent;
  data: Record<string, unknown>;
}

export async function fanOut(query: Query, events: WebhookEventData[]): Promise<number> {
  if (!events.length) return 0;
  const lineIds = [...new Set(events.map((e) => e.lineId))];
  const hooks = await query<{ id: string; accountId: string; lineId: string; events: string[] }>(
    `SELECT id, "accountId", "lineId", events FROM "Webhook" WHERE "isActive" AND "lineId" = ANY($1::text[])`,
    [lineIds],
  );
  if (!hooks.length) return 0;
  const rows = events.flatMap((e) => {
    const subscribed = hooks.filter((h) => h.lineId === e.lineId && h.accountId === e.accountId && h.events.includes(e.event));
    const payload = subscribed.length ? JSON.stringify(e.data) : "";
    return subscribed.map((h) => [newId("delivery"), h.id, e.event, payload]);
  });
  for (const chunk of chunkRows(rows)) {
    const values = valuesList(chunk, ["", "", "", "::jsonb"]);
    await query(`INSERT INTO "WebhookDelivery" (id, "webhookId", event, payload) VALUES ${values.text}`, values.params);
  }
  return rows.length;
}

import { z } from "zod";
import type { Actor } from "../access/actor";
import { getDb, sql, sqlTransaction } from "../../db";
import { ApiError, invalidParam } from "../../kernel/errors";
import type { WebhookDelivery } from "../../generated/prisma/client";
import { isId, newId } from "../../kernel/ids";
import { newWebhookSecret } from "../../webhooks/signing";
import { OPT_IN_EVENTS, WEBHOOK_EVENTS, type WebhookEvent } from "../../webhooks/event-names";
import { assertLineAccess, resolveLine } from "../lines/lines";
import { linesForActor } from "../lines/tenancy";

// A session is a webhook of kind "stream" per line, so events fan out to it as to any webhook, and the connected
// client's request claims and streams them. It hears events only while a client is connected (an idle session costs
// nothing per event); a stream the server ended (shutdown) keeps hearing them, so a restart loses nothing.

export const SESSION_TTL_MS = 10 * 60_000;
const LEASE_MS = 30_000;

const DEFAULT_EVENTS = WEBHOOK_EVENTS.filter((e) => !OPT_IN_EVENTS.includes(e));

export const ListenQuery = z.object({
  from: z.string().trim().min(1).max(320).optional().describe("Only this line (handle or ln_ ID); every line the key can use when absent"),
  events: z
    .string()
    .trim()
    .max(500)
    .optional()
    .describe(`Comma-separated event names (default: ${DEFAULT_EVENTS.join(", ")}; ${OPT_IN_EVENTS.join(" and ")} only when named)`),
  session: z.string().trim().max(100).optional().describe("Resume this lsn_ session: events since the disconnect are sent first"),
});

export interface ListenSession {
  id: string;
  webhookIds: string[];
  lines: string[];
  events: WebhookEvent[];
  /** A client that reconnected meanwhile wrote a later one, and then this stream's end leaves the session on. */
  seenAt: Date;
}

function parseEvents(raw: string | undefined): WebhookEvent[] {
  if (!raw) return [...DEFAULT_EVENTS];
  const names = [...new Set(raw.split(",").map((n) => n.trim()).filter(Boolean))];
  const unknown = names.filter((n) => !(WEBHOOK_EVENTS as readonly string[]).includes(n));
  if (unknown.length || !names.length) throw invalidParam("events", `Unknown event(s) ${unknown.join(", ")}. Events: ${WEBHOOK_EVENTS.join(", ")}.`);
  return names as WebhookEvent[];
}

export async function openListenSession(actor: Actor, input: z.output<typeof ListenQuery>): Promise<ListenSession> {
  const db = await getDb();
  const url = (id: string) => `stream:${id}`;
  if (input.session) {
    // Only the key that opened a session resumes it: another key's (which may be restricted to
    // other lines) answers as an unknown one.
    const rows =
      isId("listenSession", input.session) && actor.keyId !== null
        ? await db.webhook.findMany({
            where: { accountId: actor.accountId, apiKeyId: actor.keyId, kind: "stream", url: url(input.session) },
            include: { line: true },
          })
        : [];
    if (!rows.length) throw new ApiError("invalid_parameter_value", `No listen session '${input.session}' (sessions end ${SESSION_TTL_MS / 60_000} minutes after a disconnect).`, { param: "session" });
    const seenAt = new Date();
    await db.webhook.updateMany({ where: { id: { in: rows.map((r) => r.id) } }, data: { lastSeenAt: seenAt, isActive: true } });
    return { id: input.session, webhookIds: rows.map((r) => r.id), lines: rows.map((r) => r.line.handle), events: rows[0]!.events as WebhookEvent[], seenAt };
  }
  const events = parseEvents(input.events);
  const lines = input.from
    ? [await resolveLine(actor, input.from)]
    : await db.line.findMany({ where: { ...(await linesForActor(actor)), isActive: true }, orderBy: { id: "asc" } });
  const usable = [];
  for (const line of lines) {
    try {
      await assertLineAccess(actor, line);
      usable.push(line);
    } catch {
      // e.g. the sandbox line before activation: nothing to hear there
    }
  }
  if (!usable.length) throw new ApiError("line_not_found", "This key has no line to listen on.", { param: "from" });
  const id = newId("listenSession");
  const now = new Date();
  const rows = usable.map((line) => ({
    id: newId("webhook"),
    accountId: actor.accountId,
    lineId: line.id,
    url: url(id),
    events,
    secret: newWebhookSecret(),
    kind: "stream",
    lastSeenAt: now,
    apiKeyId: actor.keyId,
  }));
  await db.webhook.createMany({ data: rows });
  return { id, webhookIds: rows.map((r) => r.id), lines: usable.map((l) => l.handle), events, seenAt: now };
}

export async function claimSessionDeliveries(session: ListenSession, limit = 100): Promise<WebhookDelivery[]> {
  return sql<WebhookDelivery>(
    `UPDATE "WebhookDelivery" SET status = 'delivering', "leaseExpiresAt" = $2, attempts = attempts + 1
     WHERE id IN (
       SELECT id FROM "WebhookDelivery" WHERE "webhookId" = ANY($1::text[]) AND status = 'pending'
       ORDER BY "createdAt", id LIMIT $3 FOR UPDATE SKIP LOCKED)
     RETURNING *`,
    [session.webhookIds, new Date(Date.now() + LEASE_MS), limit],
  ).then((rows) => rows.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || a.id.localeCompare(b.id)));
}

export async function markStreamed(deliveryIds: string[]): Promise<void> {
  if (!deliveryIds.length) return;
  await sql(
    `UPDATE "WebhookDelivery" SET status = 'succeeded', "completedAt" = now(), "leaseExpiresAt" = NULL, "lastStatusCode" = NULL, "lastError" = NULL WHERE id = ANY($1::text[])`,
    [deliveryIds],
  );
}

export async function touchListenSession(session: ListenSession): Promise<void> {
  const db = await getDb();
  const seenAt = new Date();
  await db.webhook.updateMany({ where: { id: { in: session.webhookIds } }, data: { lastSeenAt: seenAt } });
  session.seenAt = seenAt;
}

/** Stops hearing events at once and drops what was not streamed; the resume window starts now. */
export async function closeListenSession(session: ListenSession): Promise<void> {
  await sqlTransaction(async (query) => {
    // Unless the client is back already (it resumed, and wrote a later lastSeenAt).
    const closed = await query<{ id: string }>(
      `UPDATE "Webhook" SET "isActive" = false, "lastSeenAt" = $3 WHERE id = ANY($1::text[]) AND kind = 'stream' AND "lastSeenAt" = $2 RETURNING id`,
      [session.webhookIds, session.seenAt, new Date(Math.max(Date.now(), session.seenAt.getTime() + 1))],
    );
    if (!closed.length) return;
    await query(`DELETE FROM "WebhookDelivery" WHERE "webhookId" = ANY($1::text[]) AND status IN ('pending', 'delivering')`, [closed.map((c) => c.id)]);
  });
}

export async function deleteStaleListenSessions(now = Date.now()): Promise<number> {
  const db = await getDb();
  const { count } = await db.webhook.deleteMany({ where: { kind: "stream", lastSeenAt: { lt: new Date(now - SESSION_TTL_MS) } } });
  return count;
}

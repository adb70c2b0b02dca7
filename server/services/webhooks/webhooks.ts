import { z } from "zod";
import type { Actor } from "../access/actor";
import { config } from "../../kernel/config";
import { getDb } from "../../db";
import { ApiError, invalidParam } from "../../kernel/errors";
import { keysetDesc, type Page, PageQuery, toPage } from "../../wire/pagination";
import { newId } from "../../kernel/ids";
import { serializeWebhook } from "../../wire/serializers";
import { newWebhookSecret } from "../../webhooks/signing";
import { WEBHOOK_EVENTS, type WebhookEvent } from "../../webhooks/event-names";
import { checkWebhookUrl } from "../../http-out/url-guard";
import { requireIdKind } from "../access/id-params";
import { assertLineIdAccess, resolveLine } from "../lines/lines";
import { whereForActor, whereOnLine } from "../lines/tenancy";

export {  type WebhookEvent };
/** Names clients may try that are never delivered (SPEC.md "Events"). */
const NOT_DELIVERED = new Set(["typing.started", "typing.stopped", "receipt.read"]);

const handle = z.string().trim().min(1, "must not be empty").max(320);

export const CreateWebhookBody = z.object({
  from: handle,
  url: z.string().trim().min(1, "must not be empty").max(2048).describe("HTTPS URL on a public address"),
  events: z
    .array(z.string().trim())
    .min(1, "subscribe to at least one event")
    .max(WEBHOOK_EVENTS.length * 2)
    .describe(`Any of ${WEBHOOK_EVENTS.join(", ")}`),
});
export const ListWebhooksQuery = PageQuery.extend({ from: handle.optional().describe("Only this line's webhooks") });
export const DeleteWebhookBody = z.object({ id: z.string().trim().min(1).max(100) });

function parseEvents(names: string[]): WebhookEvent[] {
  for (const name of names) {
    if (NOT_DELIVERED.has(name)) {
      throw invalidParam("events", `'${name}' is not delivered by webhooks; read typing and receipts with GET /v1/typing and /v1/receipts.`);
    }
    if (!(WEBHOOK_EVENTS as readonly string[]).includes(name)) {
      throw invalidParam("events", `Unknown event '${name}'. Events: ${WEBHOOK_EVENTS.join(", ")}.`);
    }
  }
  return [...new Set(names)] as WebhookEvent[];
}

/** A URL a webhook may be saved with; a refusal that WEBHOOK_ALLOW_INSECURE would lift says so, for local testing. */
function webhookUrl(raw: string): URL {
  const allowInsecure = config().webhookAllowInsecure;
  try {
    return checkWebhookUrl(raw, { allowInsecure });
  } catch (err) {
    const message = (err as Error).message;
    if (allowInsecure || !URL.canParse(raw) || !liftedByInsecure(raw)) throw invalidParam("url", message);
    throw invalidParam(
      "url",
      `${message}. For local testing, the server's operator can allow http:// and local addresses with WEBHOOK_ALLOW_INSECURE=true (never in production).`,
    );
  }
}

function liftedByInsecure(raw: string): boolean {
  try {
    checkWebhookUrl(raw, { allowInsecure: true });
    return true;
  } catch {
    return false;
  }
}

export async function createWebhook(actor: Actor, input: z.output<typeof CreateWebhookBody>) {
  const line = await resolveLine(actor, input.from);
  const events = parseEvents(input.events);
  const url = webhookUrl(input.url);
  const secret = newWebhookSecret();
  const db = await getDb();
  const webhook = await db.webhook.create({
    data: { id: newId("webhook"), accountId: actor.accountId, lineId: line.id, url: url.toString(), events, secret },
  });
  return serializeWebhook(webhook, { secret });
}

export async function listWebhooks(
  actor: Actor,
  input: z.output<typeof ListWebhooksQuery>,
): Promise<Page<ReturnType<typeof serializeWebhook>>> {
  const db = await getDb();
  const line = input.from ? await resolveLine(actor, input.from) : null;
  const page = keysetDesc(null, input.cursor);
  const rows = await db.webhook.findMany({
    // `listen` sessions are webhooks of kind "stream": not the owner's to manage here.
    where: { ...(line ? whereOnLine(actor, line) : await whereForActor(actor)), kind: "http", ...page.where },
    orderBy: page.orderBy,
    take: input.limit + 1,
  });
  return toPage(rows, input.limit, (w) => serializeWebhook(w), (w) => [w.id]);
}

/** On a line its key may not use, 403 line_not_accessible, as for every other object of those lines. */
export async function findWebhook(actor: Actor, id: string, param = "id") {
  requireIdKind("webhook", id, param);
  const db = await getDb();
  const webhook = await db.webhook.findFirst({ where: { id, accountId: actor.accountId, kind: "http" } });
  if (!webhook) throw new ApiError("webhook_not_found", `No webhook with ID '${id}'.`, { param });
  await assertLineIdAccess(actor, webhook.lineId);
  return webhook;
}

export async function deleteWebhook(actor: Actor, input: z.output<typeof DeleteWebhookBody>) {
  const webhook = await findWebhook(actor, input.id);
  const db = await getDb();
  await db.webhook.delete({ where: { id: webhook.id } });
  return { id: webhook.id, deleted: true as const };
}

/** For an Idempotency-Key replay by the same key; null when the webhook is gone or out of reach. */
export async function currentWebhookSecret(actor: Actor, body: object): Promise<string | null> {
  const id = (body as { id?: unknown }).id;
  if (typeof id !== "string") return null;
  return findWebhook(actor, id).then(
    (w) => w.secret,
    () => null,
  );
}

export async function getWebhook(actor: Actor, id: string) {
  return serializeWebhook(await findWebhook(actor, id));
}

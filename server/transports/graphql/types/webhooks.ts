import { resolveLine } from "../../../services/lines/lines";
import { whereForActor, whereOnLine } from "../../../services/lines/tenancy";
import {
  DELIVERY_STATUSES,
  disableWebhook,
  enableWebhook,
  findDelivery,
  ListDeliveriesQuery,
  ResendBody,
  resendDeliveries,
  rotateWebhookSecret,
  serializeDelivery,
  WebhookIdBody,
} from "../../../services/webhooks/webhook-deliveries";
import { CreateWebhookBody, createWebhook, DeleteWebhookBody, deleteWebhook, findWebhook, ListWebhooksQuery } from "../../../services/webhooks/webhooks";
import { builder, type MutationBuilder } from "../builder";
import { parseArgs } from "../inputs";

// Webhooks (GET/POST/DELETE /v1/webhooks, webhooks:read / webhooks:write), their delivery
// log with every attempt, resending, secret rotation and enable/disable. The signing secret
// is never a field of Webhook: only createWebhook and rotateWebhookSecret return it, once.

const DeliveryStatus = builder.enumType("WebhookDeliveryStatus", { values: DELIVERY_STATUSES });

builder.prismaObject("WebhookAttempt", {
  fields: (t) => ({
    startedAt: t.expose("startedAt", { type: "Timestamp" }),
    durationMs: t.exposeInt("durationMs"),
    statusCode: t.exposeInt("statusCode", { nullable: true }),
    responseExcerpt: t.exposeString("responseBody", { nullable: true, description: "The first 1 KB of the response." }),
    error: t.exposeString("error", { nullable: true, description: "The network error, when there was no response." }),
  }),
});

const WebhookDelivery = builder.prismaObject("WebhookDelivery", {
  fields: (t) => ({
    id: t.exposeID("id"),
    webhookId: t.exposeString("webhookId"),
    webhook: t.relation("webhook"),
    event: t.exposeString("event"),
    status: t.field({ type: DeliveryStatus, resolve: (d) => d.status as (typeof DELIVERY_STATUSES)[number] }),
    attempts: t.exposeInt("attempts", { description: "How many attempts were made; attemptLog lists them." }),
    nextAttemptAt: t.field({
      type: "Timestamp",
      nullable: true,
      description: "When the next attempt is due, while pending.",
      resolve: (d) => serializeDelivery(d).next_attempt_at,
    }),
    lastStatusCode: t.exposeInt("lastStatusCode", { nullable: true }),
    lastError: t.exposeString("lastError", { nullable: true }),
    createdAt: t.expose("createdAt", { type: "Timestamp" }),
    completedAt: t.expose("completedAt", { type: "Timestamp", nullable: true }),
    data: t.string({
      description: "The delivery body's `data` object, JSON-encoded, as it is signed and sent.",
      select: { payload: true },
      resolve: (d) => JSON.stringify(d.payload),
    }),
    attemptLog: t.relation("attemptLog", { query: { orderBy: { startedAt: "asc" } } }),
  }),
});

const WebhookDeliveryConnection = builder.connectionObject(
  { type: WebhookDelivery, name: "WebhookDeliveryConnection" },
  { name: "WebhookDeliveryEdge" },
);

const Webhook = builder.prismaObject("Webhook", {
  fields: (t) => ({
    id: t.exposeID("id"),
    lineId: t.exposeString("lineId"),
    lineIds: t.stringList({ description: "The one line, as line_ids in /v1.", select: { lineId: true }, resolve: (w) => [w.lineId] }),
    line: t.relation("line", { authScopes: { scope: "lines:read" } }),
    url: t.exposeString("url"),
    events: t.exposeStringList("events"),
    isActive: t.exposeBoolean("isActive"),
    disabledReason: t.exposeString("disabledReason", { nullable: true }),
    createdAt: t.expose("createdAt", { type: "Timestamp" }),
    deliveries: t.relatedConnection(
      "deliveries",
      {
        description: "Deliveries of this webhook, newest first.",
        cursor: "id",
        args: { status: t.arg({ type: DeliveryStatus }) },
        query: (args) => ({ where: args.status ? { status: args.status } : {}, orderBy: { id: "desc" } }),
      },
      WebhookDeliveryConnection,
    ),
  }),
});

const WebhookConnection = builder.connectionObject({ type: Webhook, name: "WebhookConnection" }, { name: "WebhookEdge" });

const WebhookWithSecret = builder.objectRef<{ webhookId: string; secret: string }>("WebhookWithSecret").implement({
  fields: (t) => ({
    webhook: t.prismaField({
      type: "Webhook",
      resolve: (query, parent, _args, ctx) => ctx.prisma.webhook.findUniqueOrThrow({ ...query, where: { id: parent.webhookId } }),
    }),
    secret: t.exposeString("secret", { description: "The signing secret (whsec_…). It is shown this once." }),
  }),
});

const DeletedWebhook = builder.objectRef<{ id: string; deleted: true }>("DeletedWebhook").implement({
  fields: (t) => ({ id: t.exposeID("id"), deleted: t.exposeBoolean("deleted") }),
});

const ResendResult = builder.objectRef<{ resent: number }>("ResendResult").implement({
  fields: (t) => ({ resent: t.exposeInt("resent", { description: "How many deliveries were scheduled again." }) }),
});

builder.queryFields((t) => ({
  webhooks: t.prismaConnection(
    {
      type: "Webhook",
      cursor: "id",
      description: "The account's webhooks, newest first, optionally of one line.",
      authScopes: { scope: "webhooks:read" },
      args: { from: t.arg.string() },
      resolve: async (query, _root, args, ctx) => {
        const { from } = parseArgs(ListWebhooksQuery, args);
        const where = from ? whereOnLine(ctx.actor, await resolveLine(ctx.actor, from)) : await whereForActor(ctx.actor);
        return ctx.prisma.webhook.findMany({ ...query, where: { ...where, kind: "http" }, orderBy: { id: "desc" } });
      },
    },
    WebhookConnection,
  ),
  webhook: t.prismaField({
    type: "Webhook",
    nullable: true,
    authScopes: { scope: "webhooks:read" },
    args: { id: t.arg.string({ required: true }) },
    resolve: async (query, _root, args, ctx) => {
      const { id } = parseArgs(WebhookIdBody, args);
      return ctx.prisma.webhook.findUniqueOrThrow({ ...query, where: { id: (await findWebhook(ctx.actor, id)).id } });
    },
  }),
  webhookDelivery: t.prismaField({
    type: "WebhookDelivery",
    nullable: true,
    description: "One delivery (dlv_ ID), with its data and attempt log.",
    authScopes: { scope: "webhooks:read" },
    args: { id: t.arg.string({ required: true }) },
    resolve: async (query, _root, args, ctx) => {
      const { id } = parseArgs(ListDeliveriesQuery, args);
      return ctx.prisma.webhookDelivery.findUniqueOrThrow({ ...query, where: { id: (await findDelivery(ctx.actor, id!)).id } });
    },
  }),
}));

const WebhookIdInput = builder.inputType("WebhookIdInput", {
  fields: (t) => ({ id: t.string({ required: true, description: "wh_ ID." }) }),
});

const CreateWebhookInput = builder.inputType("CreateWebhookInput", {
  fields: (t) => ({
    from: t.string({ required: true, description: "The line: handle or ln_ ID." }),
    url: t.string({ required: true }),
    events: t.stringList({ required: true, description: "message.received, message.sent, reaction.added, reaction.removed, message.failed." }),
  }),
});

const ResendWebhookDeliveryInput = builder.inputType("ResendWebhookDeliveryInput", {
  fields: (t) => ({
    id: t.string({ description: "dlv_ ID of one delivery." }),
    webhookId: t.string(),
    since: t.field({ type: "Timestamp" }),
  }),
});

/** enableWebhook and disableWebhook: { id } in, the webhook out. */
function switchWebhook(t: MutationBuilder, service: typeof enableWebhook, description: string) {
  return t.prismaField({
    type: "Webhook",
    description,
    authScopes: { scope: "webhooks:write" },
    args: { input: t.arg({ type: WebhookIdInput, required: true }) },
    resolve: async (query, _root, { input }, ctx) => {
      const { id } = await service(ctx.actor, parseArgs(WebhookIdBody, input));
      return ctx.prisma.webhook.findUniqueOrThrow({ ...query, where: { id } });
    },
  });
}

builder.mutationFields((t) => ({
  createWebhook: t.field({
    type: WebhookWithSecret,
    description: "POST /v1/webhooks: subscribe one line's events; the signing secret is returned this once.",
    authScopes: { scope: "webhooks:write" },
    args: { input: t.arg({ type: CreateWebhookInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const created = await createWebhook(ctx.actor, parseArgs(CreateWebhookBody, input));
      return { webhookId: created.id, secret: created.secret! };
    },
  }),
  deleteWebhook: t.field({
    type: DeletedWebhook,
    description: "DELETE /v1/webhooks.",
    authScopes: { scope: "webhooks:write" },
    args: { input: t.arg({ type: WebhookIdInput, required: true }) },
    resolve: (_root, { input }, ctx) => deleteWebhook(ctx.actor, parseArgs(DeleteWebhookBody, input)),
  }),
  resendWebhookDelivery: t.field({
    type: ResendResult,
    description: "Send one delivery again (id), or every failing one of a webhook created since a time (webhookId and since).",
    authScopes: { scope: "webhooks:write" },
    args: { input: t.arg({ type: ResendWebhookDeliveryInput, required: true }) },
    resolve: (_root, { input }, ctx) => resendDeliveries(ctx.actor, parseArgs(ResendBody, input)),
  }),
  rotateWebhookSecret: t.field({
    type: WebhookWithSecret,
    description: "A new signing secret, returned this once; the previous one keeps working for 24 hours.",
    authScopes: { scope: "webhooks:write" },
    args: { input: t.arg({ type: WebhookIdInput, required: true }) },
    resolve: async (_root, { input }, ctx) => {
      const rotated = await rotateWebhookSecret(ctx.actor, parseArgs(WebhookIdBody, input));
      return { webhookId: rotated.id, secret: rotated.secret! };
    },
  }),
  enableWebhook: switchWebhook(t, enableWebhook, "Re-enable a webhook disabled by 410 Gone, 5 days of failure or the owner; pending deliveries resume."),
  disableWebhook: switchWebhook(t, disableWebhook, "Stop deliveries without deleting the webhook; events meanwhile are not recorded for it."),
}));

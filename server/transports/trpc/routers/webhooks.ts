import { z } from "zod";
import {
  ListDeliveriesQuery,
  ResendBody,
  WebhookIdBody,
  disableWebhook,
  enableWebhook,
  getDelivery,
  listWebhookDeliveries,
  resendDeliveries,
  rotateWebhookSecret,
} from "../../../services/webhooks/webhook-deliveries";
import { CreateWebhookBody, DeleteWebhookBody, ListWebhooksQuery, createWebhook, deleteWebhook, getWebhook, listWebhooks } from "../../../services/webhooks/webhooks";
import { protectedProcedure, router } from "../init";

export const webhooksRouter = router({
  get: protectedProcedure.input(WebhookIdBody).query(({ ctx, input }) => getWebhook(ctx.actor, input.id)),
  list: protectedProcedure.input(ListWebhooksQuery).query(({ ctx, input }) => listWebhooks(ctx.actor, input)),
  create: protectedProcedure.input(CreateWebhookBody).mutation(({ ctx, input }) => createWebhook(ctx.actor, input)),
  delete: protectedProcedure.input(DeleteWebhookBody).mutation(({ ctx, input }) => deleteWebhook(ctx.actor, input)),
  deliveries: protectedProcedure
    .input(ListDeliveriesQuery.omit({ id: true }).extend({ webhook_id: z.string().trim().min(1).max(100) }))
    .query(({ ctx, input }) => listWebhookDeliveries(ctx.actor, input)),
  delivery: protectedProcedure.input(WebhookIdBody).query(({ ctx, input }) => getDelivery(ctx.actor, input.id)),
  resend: protectedProcedure.input(ResendBody).mutation(({ ctx, input }) => resendDeliveries(ctx.actor, input)),
  rotateSecret: protectedProcedure.input(WebhookIdBody).mutation(({ ctx, input }) => rotateWebhookSecret(ctx.actor, input)),
  enable: protectedProcedure.input(WebhookIdBody).mutation(({ ctx, input }) => enableWebhook(ctx.actor, input)),
  disable: protectedProcedure.input(WebhookIdBody).mutation(({ ctx, input }) => disableWebhook(ctx.actor, input)),
});

// POST /v1/webhooks/enable - { id }: re-enables a disabled webhook (extension)
import { apiRoute, routes } from "@/server/transports/http/api-route";
import { WebhookIdBody, enableWebhook } from "@/server/services/webhooks/webhook-deliveries";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes({
  POST: apiRoute({ scope: "webhooks:write", body: WebhookIdBody }, ({ actor, body }) => enableWebhook(actor, body)),
});

// POST /v1/webhooks/disable - { id }: stops deliveries without deleting the webhook (extension)
import { apiRoute, routes } from "@/server/transports/http/api-route";
import { WebhookIdBody, disableWebhook } from "@/server/services/webhooks/webhook-deliveries";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes({
  POST: apiRoute({ scope: "webhooks:write", body: WebhookIdBody }, ({ actor, body }) => disableWebhook(actor, body)),
});

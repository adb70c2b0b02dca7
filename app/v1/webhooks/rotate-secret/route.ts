// POST /v1/webhooks/rotate-secret - { id }: a new signing secret, shown once; the old one stays
// valid for 24 hours (extension)
import { apiRoute, routes } from "@/server/http/api-route";
import { WebhookIdBody, rotateWebhookSecret } from "@/server/services/webhook-deliveries";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes({
  POST: apiRoute({ scope: "webhooks:write", body: WebhookIdBody }, ({ actor, body }) => rotateWebhookSecret(actor, body)),
});

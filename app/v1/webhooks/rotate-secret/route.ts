// POST /v1/webhooks/rotate-secret - { id }: a new signing secret, shown once; the old one stays
// valid for 24 hours (extension). An Idempotency-Key replay shows the secret only while it is
// still the webhook's (it is not stored with the kept response).
import { apiRoute, routes } from "@/server/transports/http/api-route";
import { WebhookIdBody, rotateWebhookSecret } from "@/server/services/webhooks/webhook-deliveries";
import { currentWebhookSecret } from "@/server/services/webhooks/webhooks";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes({
  POST: apiRoute({ scope: "webhooks:write", body: WebhookIdBody, replaySecret: currentWebhookSecret }, ({ actor, body }) => rotateWebhookSecret(actor, body)),
});

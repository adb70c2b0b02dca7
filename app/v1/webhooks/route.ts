// GET /v1/webhooks - the account's webhooks (optional ?from= line), never with their secrets
// POST /v1/webhooks - subscribe a line's events; the signing secret is shown in this response only
//   (and in an Idempotency-Key replay by the same key while the secret is unchanged)
// DELETE /v1/webhooks - { id } in the body
import { apiRoute, routes } from "@/server/transports/http/api-route";
import { CreateWebhookBody, DeleteWebhookBody, ListWebhooksQuery, createWebhook, currentWebhookSecret, deleteWebhook, listWebhooks } from "@/server/services/webhooks/webhooks";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes({
  GET: apiRoute({ scope: "webhooks:read", query: ListWebhooksQuery }, ({ actor, query }) => listWebhooks(actor, query)),
  POST: apiRoute({ scope: "webhooks:write", body: CreateWebhookBody, replaySecret: currentWebhookSecret }, ({ actor, body }) => createWebhook(actor, body)),
  DELETE: apiRoute({ scope: "webhooks:write", body: DeleteWebhookBody }, ({ actor, body }) => deleteWebhook(actor, body)),
});

// POST /v1/webhooks/deliveries/resend - { id } sends one delivery again, or { webhook_id, since }
// every failed one created since then (extension)
import { apiRoute, routes } from "@/server/transports/http/api-route";
import { ResendBody, resendDeliveries } from "@/server/services/webhooks/webhook-deliveries";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes({
  POST: apiRoute({ scope: "webhooks:write", body: ResendBody }, ({ actor, body }) => resendDeliveries(actor, body)),
});

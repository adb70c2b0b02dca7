// GET /v1/webhooks/deliveries?webhook_id=wh_…[&status=] - a webhook's deliveries, newest first;
// ?id=dlv_… - one delivery with its data and every attempt (extension)
import { apiRoute, routes } from "@/server/transports/http/api-route";
import { ListDeliveriesQuery, listDeliveries } from "@/server/services/webhooks/webhook-deliveries";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes({
  GET: apiRoute({ scope: "webhooks:read", query: ListDeliveriesQuery }, ({ actor, query }) => listDeliveries(actor, query)),
});

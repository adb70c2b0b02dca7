// GET /v1/outbox - one outbox item by ?id=, or a filtered list of recent items
import { apiRoute, routes } from "@/server/transports/http/api-route";
import { OutboxQuery } from "@/server/services/schemas/v1";
import { getOutboxItem, listOutbox } from "@/server/services/messaging/outbox";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes({
  GET: apiRoute({ scope: "outbox:read", query: OutboxQuery }, ({ actor, query }) =>
    query.id ? getOutboxItem(actor, query.id) : listOutbox(actor, query),
  ),
});

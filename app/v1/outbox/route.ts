// GET /v1/outbox - one outbox item by ?id=, or a filtered list of recent items
// DELETE /v1/outbox?id= - cancels a pending item (extension): it ends failed, error "canceled"
// PATCH /v1/outbox?id= - { send_at }: moves a pending item's send to a new time (extension)
import { apiRoute, routes } from "@/server/transports/http/api-route";
import { OutboxIdQuery, OutboxQuery } from "@/server/services/schemas/v1";
import { cancelOutboxItem, getOutboxItem, listOutbox, RescheduleBody, rescheduleOutboxItem } from "@/server/services/messaging/outbox";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes({
  GET: apiRoute({ scope: "outbox:read", query: OutboxQuery }, ({ actor, query }) =>
    query.id ? getOutboxItem(actor, query.id) : listOutbox(actor, query),
  ),
  DELETE: apiRoute({ scope: "messages:write", query: OutboxIdQuery }, ({ actor, query }) => cancelOutboxItem(actor, query.id)),
  PATCH: apiRoute({ scope: "messages:write", query: OutboxIdQuery, body: RescheduleBody }, ({ actor, query, body }) =>
    rescheduleOutboxItem(actor, query.id, body),
  ),
});

// POST /v1/outbox/reject?id= - rejects a send held for approval (extension, docs/agents.md): it ends failed, error "rejected"
import { apiRoute, routes } from "@/server/transports/http/api-route";
import { OutboxIdQuery } from "@/server/services/schemas/v1";
import { rejectSend } from "@/server/services/messaging/approvals";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes({
  POST: apiRoute({ scope: "outbox:approve", query: OutboxIdQuery }, ({ actor, query }) => rejectSend(actor, query.id)),
});

// POST /v1/outbox/approve?id= - approves a send held for approval (extension, docs/agents.md): it goes now, or at its send_at
import { apiRoute, routes } from "@/server/transports/http/api-route";
import { OutboxIdQuery } from "@/server/services/schemas/v1";
import { approveSend } from "@/server/services/messaging/approvals";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes({
  POST: apiRoute({ scope: "outbox:approve", query: OutboxIdQuery }, ({ actor, query }) => approveSend(actor, query.id)),
});

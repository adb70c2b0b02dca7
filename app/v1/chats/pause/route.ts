// POST /v1/chats/pause?id= - pauses automated sending in a chat (extension, human takeover, docs/agents.md)
import { apiRoute, routes } from "@/server/transports/http/api-route";
import { ChatIdQuery } from "@/server/services/schemas/v1";
import { pauseChat } from "@/server/services/messaging/takeover";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes({
  POST: apiRoute({ scope: "outbox:approve", query: ChatIdQuery }, ({ actor, query }) => pauseChat(actor, query.id)),
});

// POST /v1/chats/resume?id= - resumes automated sending in a paused chat (extension, docs/agents.md)
import { apiRoute, routes } from "@/server/transports/http/api-route";
import { ChatIdQuery } from "@/server/services/schemas/v1";
import { resumeChat } from "@/server/services/messaging/takeover";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes({
  POST: apiRoute({ scope: "outbox:approve", query: ChatIdQuery }, ({ actor, query }) => resumeChat(actor, query.id)),
});

// GET /v1/typing - typing indicators in one chat
import { apiRoute, routes } from "@/server/http/api-route";
import { ChatStateQuery } from "@/server/schemas/v1";
import { listTyping } from "@/server/services/chat-state";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes({
  GET: apiRoute({ scope: "typing:read", query: ChatStateQuery }, ({ actor, query }) => listTyping(actor, query)),
});

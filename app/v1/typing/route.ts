// GET /v1/typing - typing indicators in one chat; POST /v1/typing - start typing, or stop with state "off"
import { apiRoute, routes } from "@/server/transports/http/api-route";
import { ChatStateQuery } from "@/server/services/schemas/v1";
import { listTyping } from "@/server/services/messaging/chat-state";
import { SendTypingBody, sendTyping } from "@/server/services/messaging/send";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes({
  GET: apiRoute({ scope: "typing:read", query: ChatStateQuery }, ({ actor, query }) => listTyping(actor, query)),
  POST: apiRoute({ scope: "typing:write", body: SendTypingBody }, ({ actor, body, requestId }) => sendTyping(actor, body, requestId)),
});

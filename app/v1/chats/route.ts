// GET /v1/chats - chats of a line, most recent activity first
import { apiRoute, routes } from "@/server/transports/http/api-route";
import { ListChatsQuery } from "@/server/services/schemas/v1";
import { listChats } from "@/server/services/messaging/chats";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes({
  GET: apiRoute({ scope: "chats:read", query: ListChatsQuery, cache: true }, ({ actor, query }) => listChats(actor, query)),
});

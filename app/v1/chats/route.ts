// GET /v1/chats - chats of a line, most recent activity first
import { apiRoute, routes } from "@/server/http/api-route";
import { ListChatsQuery } from "@/server/schemas/v1";
import { listChats } from "@/server/services/chats";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes({
  GET: apiRoute({ scope: "chats:read", query: ListChatsQuery, cache: true }, ({ actor, query }) => listChats(actor, query)),
});

// GET /v1/reactions - reactions on one message (msg_ ID or GUID)
import { apiRoute, routes } from "@/server/http/api-route";
import { ListReactionsQuery } from "@/server/schemas/v1";
import { listReactions } from "@/server/services/reactions";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes({
  GET: apiRoute({ scope: "reactions:read", query: ListReactionsQuery }, ({ actor, query }) => listReactions(actor, query)),
});

// GET /v1/lines - the lines this key can use (its account's, and the sandbox)
import { apiRoute, routes } from "@/server/http/api-route";
import { ListLinesQuery } from "@/server/schemas/v1";
import { listLines } from "@/server/services/lines";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes({
  GET: apiRoute({ scope: "lines:read", query: ListLinesQuery, cache: true }, ({ actor, query }) => listLines(actor, query)),
});

// GET /v1/lines - the lines this key can use (its account's, and the sandbox)
import { apiRoute, routes } from "@/server/transports/http/api-route";
import { ListLinesQuery } from "@/server/services/schemas/v1";
import { listLines } from "@/server/services/lines/lines";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes({
  // Never from the read cache: a line created or changed by another process (the operator CLI,
  // another instance) must show at once, and the cache only hears of this process's writes.
  GET: apiRoute({ scope: "lines:read", query: ListLinesQuery }, ({ actor, query }) => listLines(actor, query)),
});

// GET /v1/capacity?from= - what a line (or each line of a pool) can still send, and what waits (extension)
import { apiRoute, routes } from "@/server/transports/http/api-route";
import { CapacityQuery, getCapacity } from "@/server/services/lines/capacity";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes({
  GET: apiRoute({ scope: "lines:read", query: CapacityQuery }, ({ actor, query }) => getCapacity(actor, query)),
});

// GET /v1/pools - the account's sender pools (extension); a pool_ ID is a `from` of POST /v1/messages
import { apiRoute, routes } from "@/server/transports/http/api-route";
import { listPools } from "@/server/services/pools/pools";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes({
  GET: apiRoute({ scope: "lines:read" }, ({ actor }) => listPools(actor)),
});

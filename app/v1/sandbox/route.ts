// GET /v1/sandbox - the caller's sandbox state; POST /v1/sandbox - start activation
import { apiRoute, routes } from "@/server/transports/http/api-route";
import { activateSandbox, getSandbox } from "@/server/services/lines/sandbox";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes({
  GET: apiRoute({}, ({ actor }) => getSandbox(actor)),
  POST: apiRoute({}, ({ actor }) => activateSandbox(actor)),
});

// GET /v1/sandbox - the caller's sandbox state; POST /v1/sandbox - start activation
import { apiRoute, routes } from "@/server/http/api-route";
import { activateSandbox, getSandbox } from "@/server/services/sandbox";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes({
  GET: apiRoute({}, ({ actor }) => getSandbox(actor)),
  POST: apiRoute({}, ({ actor }) => activateSandbox(actor)),
});

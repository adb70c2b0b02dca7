// /v1 itself and any other /v1 path no route serves: a JSON 404 in the error envelope (and
// CORS preflight). Optional catch-all, so bare /v1 gets it too instead of Next's HTML page.
import { routes } from "@/server/transports/http/api-route";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes({});

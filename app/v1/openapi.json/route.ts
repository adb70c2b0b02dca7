// GET /v1/openapi.json - the OpenAPI 3.1 document of /v1 (no key needed)
import { openApiDocument } from "@/server/transports/openapi/openapi";
import { routes } from "@/server/transports/http/api-route";
import { CORS_HEADERS, requestIdOf } from "@/server/transports/http/responses";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes({
  GET: (request) =>
    Response.json(openApiDocument(), {
      headers: { ...CORS_HEADERS, "Cache-Control": "public, max-age=300", "Request-Id": requestIdOf(request.headers) },
    }),
});

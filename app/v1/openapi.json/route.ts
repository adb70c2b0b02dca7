// GET /v1/openapi.json - the OpenAPI 3.1 document of /v1 (no key needed)
import { openApiDocument } from "@/server/api/openapi";
import { routes } from "@/server/http/api-route";
import { CORS_HEADERS, requestIdOf } from "@/server/http/responses";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes({
  GET: (request) =>
    Response.json(openApiDocument(), {
      headers: { ...CORS_HEADERS, "Cache-Control": "public, max-age=300", "Request-Id": requestIdOf(request.headers) },
    }),
});

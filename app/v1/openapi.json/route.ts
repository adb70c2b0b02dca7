// GET /v1/openapi.json - the OpenAPI 3.1 document of /v1 (no key needed)
import { openApiDocument } from "@/server/api/openapi";
import { CORS_HEADERS, preflightResponse } from "@/server/http/responses";

export function GET(): Response {
  return Response.json(openApiDocument(), { headers: { ...CORS_HEADERS, "Cache-Control": "public, max-age=300" } });
}

export const OPTIONS = preflightResponse;

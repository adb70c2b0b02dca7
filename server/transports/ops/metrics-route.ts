import { timingSafeEqual } from "node:crypto";
import { config } from "../../kernel/config";
import { ApiError } from "../../kernel/errors";
import { errorResponse, requestIdOf } from "../http/responses";
import { metrics } from "../../observability/metrics";

function bearerMatches(authorization: string | null, token: string): boolean {
  const given = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "")?.[1];
  if (!given) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

// The metrics and /readyz's details: with METRICS_TOKEN, or outside production while no token is
// set. In production without a token nobody may.
export function operatorRequest(request: Request): boolean {
  const { METRICS_TOKEN: token, isProduction } = config();
  return token ? bearerMatches(request.headers.get("authorization"), token) : !isProduction;
}

export async function metricsResponse(request: Request): Promise<Response> {
  if (!operatorRequest(request)) {
    const err = !config().METRICS_TOKEN
      ? new ApiError("missing_api_key", "GET /metrics needs METRICS_TOKEN: set it on the server, then send 'Authorization: Bearer <METRICS_TOKEN>'.")
      : !request.headers.get("authorization")
        ? new ApiError("missing_api_key", "GET /metrics needs 'Authorization: Bearer <METRICS_TOKEN>'.")
        : new ApiError("invalid_api_key", "Wrong metrics token.");
    const res = errorResponse(err, requestIdOf(request.headers));
    res.headers.set("WWW-Authenticate", 'Bearer realm="metrics"');
    return res;
  }
  const { registry } = metrics();
  try {
    return new Response(await registry.metrics(), { headers: { "Content-Type": registry.contentType, "Cache-Control": "no-store" } });
  } catch (err) {
    return errorResponse(err, requestIdOf(request.headers));
  }
}

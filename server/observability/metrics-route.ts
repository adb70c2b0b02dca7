import { timingSafeEqual } from "node:crypto";
import { config } from "../config";
import { ApiError } from "../errors";
import { errorResponse, requestIdOf } from "../http/responses";
import { metrics } from "./metrics";

/** Whether `authorization` is `Bearer <token>` (compared in constant time). */
function bearerMatches(authorization: string | null, token: string): boolean {
  const given = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "")?.[1];
  if (!given) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

export async function metricsResponse(request: Request): Promise<Response> {
  const token = config().METRICS_TOKEN;
  if (token && !bearerMatches(request.headers.get("authorization"), token)) {
    const missing = !request.headers.get("authorization");
    const err = missing
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

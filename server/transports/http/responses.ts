import { ApiError } from "../../kernel/errors";
import { databaseUnavailableError } from "../../db/database-failures";
import { requestIdOf } from "../../observability/request-context";
import { log } from "../../kernel/log";
import { metrics } from "../../observability/metrics";
import { errorEnvelope } from "../../wire/error-envelope";

export const CORS_HEADERS: Record<string, string> = {
  "Access-Control-Allow-Origin": "*",
  "Access-Control-Allow-Methods": "GET, POST, PATCH, DELETE, OPTIONS",
  "Access-Control-Allow-Headers": "Authorization, Content-Type, Idempotency-Key, X-Filename",
  "Access-Control-Expose-Headers":
    "Request-Id, Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, Idempotent-Replayed",
  "Access-Control-Max-Age": "86400",
};

export { requestIdOf };

export function envelopeHeaders(requestId: string, headers: Record<string, string> = {}): Record<string, string> {
  return { "Content-Type": "application/json; charset=utf-8", "Request-Id": requestId, ...CORS_HEADERS, ...headers };
}

export function jsonResponse(status: number, body: object, requestId: string, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify({ ...body, request_id: requestId }), { status, headers: envelopeHeaders(requestId, headers) });
}

/** A response from an already serialized JSON object; request_id is appended to it. */
export function jsonTextResponse(status: number, json: string, requestId: string, headers: Record<string, string> = {}): Response {
  const body = json === "{}" ? `{"request_id":"${requestId}"}` : `${json.slice(0, -1)},"request_id":"${requestId}"}`;
  return new Response(body, { status, headers: envelopeHeaders(requestId, headers) });
}

/** `body`: the envelope without request_id. */
export interface ErrorAnswer {
  status: number;
  body: { error: Record<string, string> };
  headers: Record<string, string>;
}

/** What any transport answers for `err`: an ApiError as itself, anything else as a logged 500 quoting the request ID. */
export function errorAnswer(err: unknown, requestId: string, headers: Record<string, string> = {}): ErrorAnswer {
  const unavailable = databaseUnavailableError(err, requestId);
  if (unavailable) err = unavailable;
  if (err instanceof ApiError) {
    if (err.type === "rate_limit_error") metrics().rateLimited.inc({ code: err.code });
    return { status: err.status, body: { error: errorEnvelope(err, requestId).error }, headers: { ...headers, ...err.headers } };
  }
  log().error({ err, request_id: requestId }, "unexpected error");
  const error = { type: "api_error", code: "internal_error", message: `An unexpected error occurred. Quote request ${requestId} when reporting it.` };
  return { status: 500, body: { error }, headers };
}

export function errorResponse(err: unknown, requestId: string, headers: Record<string, string> = {}): Response {
  const answer = errorAnswer(err, requestId, headers);
  return jsonResponse(answer.status, answer.body, requestId, answer.headers);
}

export function preflightResponse(request: Request): Response {
  return new Response(null, { status: 204, headers: { ...CORS_HEADERS, "Request-Id": requestIdOf(request.headers) } });
}

export function routeNotFound(request: Request): Response {
  const url = new URL(request.url);
  const err = new ApiError("route_not_found", `Unrecognized request URL (${request.method}: ${url.pathname}).`);
  return errorResponse(err, requestIdOf(request.headers));
}

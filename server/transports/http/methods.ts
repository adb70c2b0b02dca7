import type { Socket } from "node:net";
import { ApiError } from "../../kernel/errors";
import { newId } from "../../kernel/ids";
import { errorEnvelope } from "../../wire/error-envelope";
import { envelopeHeaders } from "./responses";

// Requests no route can answer, in the JSON envelope (docs/api.md, Conventions), from the HTTP
// hook of every server. TRACE and TRACK cannot reach a route (the fetch standard forbids them in
// a Request: Next answered a plain-text 500), Next answered PROPFIND an empty 400, and Node
// answers its parser's refusals with a bare status and no Request-Id.

const ROUTED_METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);
const NEVER_SERVED = new Set(["TRACE", "TRACK"]);

function allowedMethods(pathname: string): string {
  if (pathname.startsWith("/api/inbound/")) return "POST";
  if (pathname === "/v1" || pathname.startsWith("/v1/")) return "GET, POST, PATCH, DELETE, OPTIONS";
  if (pathname === "/api/graphql") return "GET, POST, OPTIONS";
  if (["/healthz", "/readyz", "/metrics", "/api/health"].includes(pathname) || pathname.startsWith("/api/files/")) return "GET, HEAD";
  return "GET, HEAD, POST";
}

export function methodNotAllowed(method: string, pathname: string): ApiError {
  const allow = allowedMethods(pathname);
  return new ApiError("method_not_allowed", `${method} is not allowed on ${pathname.slice(0, 200)} (allowed: ${allow}).`, { headers: { Allow: allow } });
}

export function unroutedMethod(method: string | undefined, url: string | undefined): ApiError | null {
  if (method === undefined || ROUTED_METHODS.has(method)) return null;
  const raw = url ?? "/";
  const query = raw.indexOf("?");
  const pathname = query === -1 ? raw : raw.slice(0, query);
  const v1 = pathname === "/v1" || pathname.startsWith("/v1/");
  if (v1 && !NEVER_SERVED.has(method)) {
    return new ApiError("route_not_found", `Unrecognized request URL (${method.slice(0, 20)}: ${pathname.slice(0, 200)}).`);
  }
  return methodNotAllowed(method.slice(0, 20), pathname);
}

export function errorPayload(err: ApiError, requestId: string): { body: string; headers: Record<string, string> } {
  return { body: JSON.stringify(errorEnvelope(err, requestId)), headers: envelopeHeaders(requestId, err.headers) };
}

/** Node's own choice of status, in our envelope. */
function parserError(err: { code?: string }): ApiError {
  switch (err.code) {
    case "HPE_HEADER_OVERFLOW":
      return new ApiError("request_headers_too_large", "The request's headers are too large.");
    case "HPE_CHUNK_EXTENSIONS_OVERFLOW":
      return new ApiError("request_too_large", "The request's chunk extensions are too large.");
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return new ApiError("request_timeout", "The request did not arrive in time.");
    case "HPE_INVALID_METHOD":
      return new ApiError("method_not_allowed", "Unknown HTTP method.", { headers: { Allow: "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS" } });
    default:
      return new ApiError("malformed_request", "The request is not valid HTTP/1.1.");
  }
}

const REASONS: Record<number, string> = { 400: "Bad Request", 405: "Method Not Allowed", 408: "Request Timeout", 413: "Payload Too Large", 431: "Request Header Fields Too Large" };

/** A server's `clientError`. Nothing is written once a response has started (it would corrupt it). */
export function answerClientError(err: Error & { code?: string }, socket: Socket): void {
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (err.code === "ECONNRESET" || !socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const requestId = newId("request");
  const apiError = parserError(err);
  const { body, headers } = errorPayload(apiError, requestId);
  const lines = Object.entries({ ...headers, "Content-Length": String(Buffer.byteLength(body)), Connection: "close" }).map(([k, v]) => `${k}: ${v}\r\n`);
  socket.end(`HTTP/1.1 ${apiError.status} ${REASONS[apiError.status] ?? "Bad Request"}\r\n${lines.join("")}\r\n${body}`);
}

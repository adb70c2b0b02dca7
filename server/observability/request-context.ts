import type { IncomingHttpHeaders } from "node:http";
import { newId } from "../kernel/ids";
import { processSingleton } from "../kernel/singleton";

// What one HTTP request is, as the request log and the metrics see it: its request_id (the one
// the client gets back), and who made it once that is known. The HTTP hook (http-hook.ts) opens
// a context for every request any server of this process takes and hands its ID to the
// handlers on an internal request header (replacing whatever a client sent under that name);
// the handlers read it from there and name the caller once authentication knows it.
//
// No AsyncLocalStorage: on Node 20 every storage that has ever been entered makes every promise
// the process creates copy its store, which cost more than the whole request log.

/** The request header the hook writes the request's ID to. Only the hook's own value is believed. */
export const REQUEST_ID_HEADER = "x-relay-request-id";

export interface RequestContext {
  requestId: string;
  /** The connection's peer address (the client's, or the nearest proxy's). */
  clientAddress?: string;
  accountId?: string;
  keyId?: string;
}

/** The contexts of the requests under way, by request ID (the hook adds and removes them). */
const open = processSingleton("request-contexts", () => new Map<string, RequestContext>());

/** For the hook: a request starts (its context is findable by ID until closeRequest). */
export function openRequest(context: RequestContext): void {
  open.set(context.requestId, context);
}

export function closeRequest(requestId: string): void {
  open.delete(requestId);
}

type AnyHeaders = Headers | IncomingHttpHeaders;

function headerValue(headers: AnyHeaders): string | undefined {
  if (typeof (headers as Headers).get === "function") return (headers as Headers).get(REQUEST_ID_HEADER) ?? undefined;
  const value = (headers as IncomingHttpHeaders)[REQUEST_ID_HEADER];
  return typeof value === "string" ? value : undefined;
}

/**
 * The ID of the request with these headers: the one the hook gave it (so every answer and log
 * line of one request share it), or a new one where no hook runs (tests calling a handler
 * directly). A value the hook did not hand out, say one a client sent itself, is not believed.
 */
export function requestIdOf(headers: AnyHeaders): string {
  const given = headerValue(headers);
  return given !== undefined && open.has(given) ? given : newId("request");
}

/** Records who is calling, for the request's log line (IDs only, never a secret). */
export function annotateRequest(requestId: string, who: { accountId: string; keyId: string | null }): void {
  const context = open.get(requestId);
  if (!context) return;
  context.accountId = who.accountId;
  if (who.keyId) context.keyId = who.keyId;
}

/** The connection's peer address of the request with these headers (undefined where no hook runs). */
export function clientAddressOf(headers: AnyHeaders): string | undefined {
  const given = headerValue(headers);
  return given === undefined ? undefined : open.get(given)?.clientAddress;
}

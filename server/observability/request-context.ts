import type { IncomingHttpHeaders } from "node:http";
import { newId } from "../kernel/ids";
import { processSingleton } from "../kernel/singleton";

// The HTTP hook hands a request's ID to the handlers on an internal header. No AsyncLocalStorage:
// on Node 20 any storage ever entered makes every promise copy its store, which cost more than the
// whole request log.

/** Only the hook's own value is believed, not what a client sent under this name. */
export const REQUEST_ID_HEADER = "x-relay-request-id";

export interface RequestContext {
  requestId: string;
  clientAddress?: string;
  accountId?: string;
  keyId?: string;
}

const open = processSingleton("request-contexts", () => new Map<string, RequestContext>());

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

/** A new ID where no hook runs (tests calling a handler directly). */
export function requestIdOf(headers: AnyHeaders): string {
  const given = headerValue(headers);
  return given !== undefined && open.has(given) ? given : newId("request");
}

export function annotateRequest(requestId: string, who: { accountId: string; keyId: string | null }): void {
  const context = open.get(requestId);
  if (!context) return;
  context.accountId = who.accountId;
  if (who.keyId) context.keyId = who.keyId;
}

export function clientAddressOf(headers: AnyHeaders): string | undefined {
  const given = headerValue(headers);
  return given === undefined ? undefined : open.get(given)?.clientAddress;
}

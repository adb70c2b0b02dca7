import { AsyncLocalStorage } from "node:async_hooks";
import { newId } from "../ids";
import { processSingleton } from "../singleton";

// What one HTTP request is, as the request log and the metrics see it: its request_id (the one
// the client gets back), and who made it once that is known. The HTTP hook (http-hook.ts)
// opens a context for every request any server of this process takes; the handlers deep in the
// app fill it in (authentication names the account and key) without passing it around.

export interface RequestContext {
  requestId: string;
  accountId?: string;
  keyId?: string;
}

const storage = processSingleton("request-context", () => new AsyncLocalStorage<RequestContext>());

export function runWithRequestContext<T>(context: RequestContext, fn: () => T): T {
  return storage.run(context, fn);
}

export function requestContext(): RequestContext | undefined {
  return storage.getStore();
}

/** The current request's ID (so every answer and log line of one request share it), or a new one outside a request. */
export function currentRequestId(): string {
  return storage.getStore()?.requestId ?? newId("request");
}

/** Records who is calling, for the request's log line (IDs only, never a secret). */
export function annotateRequest(who: { accountId: string; keyId: string | null }): void {
  const context = storage.getStore();
  if (!context) return;
  context.accountId = who.accountId;
  if (who.keyId) context.keyId = who.keyId;
}

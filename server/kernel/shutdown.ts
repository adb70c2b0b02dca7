import { setMaxListeners } from "node:events";
import { processSingleton } from "./singleton";

// Long-lived responses (GET /v1/listen, GraphQL subscriptions over server-sent events) never
// end by themselves: a server with one listener attached would not stop until killed. When the
// process stops (server/boot/lifecycle.ts) they end; clients reconnect (`listen` resumes its session
// and receives what happened meanwhile).

const state = processSingleton("shutdown", () => {
  const controller = new AbortController();
  // One listener per open stream: as many as there are clients, by design.
  setMaxListeners(0, controller.signal);
  return { controller };
});

/** Aborted when the process is asked to stop. */
export function shutdownSignal(): AbortSignal {
  return state.controller.signal;
}

/** Ends every long-lived stream of this process. */
export function beginShutdown(): void {
  state.controller.abort();
}

/**
 * A signal aborted by `signal` or by the process stopping, whichever comes first; `release()`
 * when the stream ends detaches it from both. (Not AbortSignal.any: on Node 20 its dependants
 * stay referenced by the long-lived shutdown signal, one per stream, forever.)
 */
export function untilShutdown(signal?: AbortSignal): { signal: AbortSignal; release(): void } {
  const controller = new AbortController();
  const sources = [shutdownSignal(), ...(signal ? [signal] : [])];
  const abort = () => controller.abort();
  if (sources.some((s) => s.aborted)) abort();
  else for (const source of sources) source.addEventListener("abort", abort, { once: true });
  return {
    signal: controller.signal,
    release: () => sources.forEach((source) => source.removeEventListener("abort", abort)),
  };
}

/** True once the process has been asked to stop (GET /readyz then answers 503). */
export function isShuttingDown(): boolean {
  return state.controller.signal.aborted;
}

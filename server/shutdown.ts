import { setMaxListeners } from "node:events";
import { processSingleton } from "./singleton";

// Long-lived responses (GET /v1/listen, GraphQL subscriptions over server-sent events) never
// end by themselves, and `next start` waits for open requests before it exits on SIGTERM or
// SIGINT: without this, a server with one listener attached would not stop until killed. On
// either signal they end, so the server exits; clients reconnect (`listen` resumes its session
// and receives what happened meanwhile).

const state = processSingleton("shutdown", () => {
  const controller = new AbortController();
  // One listener per open stream: as many as there are clients, by design.
  setMaxListeners(0, controller.signal);
  return { controller, installed: false };
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

/** Called once at startup: SIGTERM and SIGINT end the streams (Next.js itself then exits). */
export function endStreamsOnSignals(): void {
  if (state.installed) return;
  state.installed = true;
  process.on("SIGTERM", beginShutdown);
  process.on("SIGINT", beginShutdown);
}

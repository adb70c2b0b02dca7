import { processSingleton } from "./singleton";

// Long-lived responses (GET /v1/listen, GraphQL subscriptions over server-sent events) never
// end by themselves, and `next start` waits for open requests before it exits on SIGTERM or
// SIGINT: without this, a server with one listener attached would not stop until killed. On
// either signal they end, so the server exits; clients reconnect (`listen` resumes its session
// and receives what happened meanwhile).

const state = processSingleton("shutdown", () => ({ controller: new AbortController(), installed: false }));

/** Aborted when the process is asked to stop. */
export function shutdownSignal(): AbortSignal {
  return state.controller.signal;
}

/** Ends every long-lived stream of this process. */
export function beginShutdown(): void {
  state.controller.abort();
}

/** `signal` or the process stopping, whichever comes first. */
export function untilShutdown(signal?: AbortSignal): AbortSignal {
  return signal ? AbortSignal.any([signal, shutdownSignal()]) : shutdownSignal();
}

/** Called once at startup: SIGTERM and SIGINT end the streams (Next.js itself then exits). */
export function endStreamsOnSignals(): void {
  if (state.installed) return;
  state.installed = true;
  process.on("SIGTERM", beginShutdown);
  process.on("SIGINT", beginShutdown);
}

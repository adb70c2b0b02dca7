import { setMaxListeners } from "node:events";
import { processSingleton } from "./singleton";

// Long-lived streams never end by themselves: they end when the process stops, and clients reconnect.

const state = processSingleton("shutdown", () => {
  const controller = new AbortController();
  // One listener per open stream: as many as there are clients, by design.
  setMaxListeners(0, controller.signal);
  return { controller };
});

export function shutdownSignal(): AbortSignal {
  return state.controller.signal;
}

export function beginShutdown(): void {
  state.controller.abort();
}

/** Not AbortSignal.any: on Node 20 its dependants stay referenced by the shutdown signal forever. */
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

export function isShuttingDown(): boolean {
  return state.controller.signal.aborted;
}

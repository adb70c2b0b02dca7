import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import { liveEvents } from "../events/live";
import { beginShutdown, shutdownSignal, untilShutdown } from "./shutdown";

// Streams end when the process is told to stop, and a finished stream leaves nothing attached
// to the process-wide signal (one listener per open stream, none after).

describe("shutdown", () => {
  it("detaches finished streams, then ends every open one when the process stops", async () => {
    const baseline = getEventListeners(shutdownSignal(), "abort").length;
    for (let i = 0; i < 50; i++) {
      const request = new AbortController();
      const stream = untilShutdown(request.signal);
      if (i % 2) request.abort();
      expect(stream.signal.aborted).toBe(i % 2 === 1);
      stream.release();
      expect(getEventListeners(request.signal, "abort")).toHaveLength(0);
    }
    const finished = liveEvents(() => true);
    await finished.return!();
    expect(getEventListeners(shutdownSignal(), "abort")).toHaveLength(baseline);

    const open = untilShutdown(new AbortController().signal);
    const events = liveEvents(() => true);
    const next = events.next();
    expect(getEventListeners(shutdownSignal(), "abort")).toHaveLength(baseline + 2);
    beginShutdown();
    expect(open.signal.aborted).toBe(true);
    await expect(next).resolves.toEqual({ value: undefined, done: true });
    expect(untilShutdown().signal.aborted).toBe(true); // a stream opened while stopping ends at once
  });
});

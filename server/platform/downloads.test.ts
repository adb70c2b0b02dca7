import { describe, expect, it } from "vitest";
import { listenLoopback } from "../../tests/fakes/http";
import { createBlueBubblesClient } from "./bluebubbles/client";
import { downloadSlots } from "./download-slots";
import { createTwilioClient } from "./twilio/client";

// Provider media downloads (issue 23, security 4): the bytes go to their sink (storage) as they
// arrive, never gathered whole first; a body over the cap stops the download; and downloads
// run within a per-process and a per-line limit.

describe("streamed downloads", () => {
  it("hands a BlueBubbles attachment to its sink as it arrives: the sink has the first half before the server sends the second", async () => {
    let sinkHasFirstHalf: () => void = () => {};
    const firstHalfSunk = new Promise<void>((resolve) => (sinkHasFirstHalf = resolve));
    const server = await listenLoopback(async (_req, res) => {
      res.writeHead(200, { "content-type": "image/heic" });
      res.write(Buffer.alloc(64 * 1024, 1));
      // A client that buffers the whole body before its sink sees any would wait here forever.
      await firstHalfSunk;
      res.end(Buffer.alloc(64 * 1024, 2));
    });
    try {
      const client = createBlueBubblesClient({ url: server.url, password: "pw" });
      let received = 0;
      const got = await client.downloadAttachment("at_1", {
        maxBytes: 1024 * 1024,
        timeoutMs: 10_000,
        sink: async (chunks) => {
          for await (const c of chunks) {
            received += c.byteLength;
            if (received >= 64 * 1024) sinkHasFirstHalf();
          }
          return received;
        },
      });
      expect(got).toEqual({ content: 128 * 1024, mimeType: "image/heic" });
    } finally {
      await server.close();
    }
  });

  it("stops a Twilio media body at the cap, mid-stream, with too_large: the sink saw no more than the cap", async () => {
    let closed = false;
    const server = await listenLoopback(async (req, res) => {
      res.writeHead(200, { "content-type": "image/png" }); // no Content-Length: only counting catches it
      req.socket.on("close", () => (closed = true));
      for (let i = 0; i < 64 && !closed; i++) {
        res.write(Buffer.alloc(16 * 1024));
        await new Promise((r) => setTimeout(r, 5));
      }
      res.end();
    });
    try {
      const client = createTwilioClient({ accountSid: `AC${"1".repeat(32)}`, authToken: "tok-123456", baseUrl: server.url }, { mediaFromBaseUrl: true });
      let sunk = 0;
      const error = await client
        .downloadMedia(`${server.url}/media/1`, {
          maxBytes: 100_000,
          sink: async (chunks) => {
            for await (const c of chunks) sunk += c.byteLength;
            return sunk;
          },
        })
        .then(() => null, (e: unknown) => e);
      expect(error).toMatchObject({ kind: "too_large" });
      expect(sunk).toBeLessThanOrEqual(100_000);
      await expect.poll(() => closed).toBe(true);
    } finally {
      await server.close();
    }
  });
});

describe("download slots", () => {
  it("runs at most perProcess downloads at once, at most perLine for one line, and a busy line does not hold up another", async () => {
    const slots = downloadSlots(3, 2);
    let peak = 0;
    const perLine = new Map<string, number>();
    const peakPerLine = new Map<string, number>();
    const order: string[] = [];
    const gates: (() => void)[] = [];
    const task = (line: string, name: string) =>
      slots.run(line, async () => {
        order.push(name);
        peak = Math.max(peak, slots.active());
        const n = (perLine.get(line) ?? 0) + 1;
        perLine.set(line, n);
        peakPerLine.set(line, Math.max(peakPerLine.get(line) ?? 0, n));
        await new Promise<void>((release) => gates.push(release));
        perLine.set(line, perLine.get(line)! - 1);
      });
    const all = [task("busy", "a1"), task("busy", "a2"), task("busy", "a3"), task("busy", "a4"), task("quiet", "b1")];
    await new Promise((r) => setTimeout(r, 10));
    // busy holds its 2; the third process slot goes to the quiet line, not to a3 waiting before it.
    expect(order).toEqual(["a1", "a2", "b1"]);
    while (gates.length) {
      gates.shift()!();
      await new Promise((r) => setTimeout(r, 5));
    }
    await Promise.all(all);
    expect(order).toEqual(["a1", "a2", "b1", "a3", "a4"]);
    expect(peak).toBe(3);
    expect(peakPerLine.get("busy")).toBe(2);
    expect(slots.active()).toBe(0);
  });

  it("frees the slot when a download fails", async () => {
    const slots = downloadSlots(1, 1);
    await expect(slots.run("l", async () => Promise.reject(new Error("gone")))).rejects.toThrow("gone");
    expect(await slots.run("l", async () => "next")).toBe("next");
  });
});

import { describe, expect, it } from "vitest";
import { listenLoopback } from "../../tests/fakes/http";
import { createBlueBubblesClient } from "./bluebubbles/client";
import { type FairSlots, fairSlots } from "./download-slots";
import { createTwilioClient } from "./twilio/client";

// Provider media downloads (issue 23, security 4): the bytes go to their sink (storage) as they
// arrive, never gathered whole first; a body over the cap stops the download; and downloads
// (and line checks) run within a per-process and a per-line limit, shared fairly between
// accounts, with a bounded wait per account (issue 37, item 6).

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
  /** A task that holds its slot until released; `order` records the starts. */
  function harness(slots: FairSlots) {
    const order: string[] = [];
    const gates = new Map<string, () => void>();
    const task = (accountId: string, lineId: string, name: string) =>
      slots.run({ accountId, lineId }, async () => {
        order.push(name);
        await new Promise<void>((release) => gates.set(name, release));
        return name;
      });
    const settle = () => new Promise((r) => setTimeout(r, 5));
    const release = async (name: string) => {
      gates.get(name)!();
      gates.delete(name);
      await settle();
    };
    return { order, task, settle, release, running: () => [...gates.keys()] };
  }

  it("runs at most perProcess at once, at most perLine for one line, and a busy line does not hold up another", async () => {
    const slots = fairSlots({ perProcess: 3, perLine: 2 });
    const h = harness(slots);
    const all = [h.task("acct", "busy", "a1"), h.task("acct", "busy", "a2"), h.task("acct", "busy", "a3"), h.task("acct", "busy", "a4"), h.task("acct", "quiet", "b1")];
    await h.settle();
    // busy holds its 2; the third process slot goes to the quiet line, not to a3 waiting before it.
    expect(h.order).toEqual(["a1", "a2", "b1"]);
    expect(slots.active()).toBe(3);
    for (const name of ["a1", "a2", "b1", "a3", "a4"]) await h.release(name);
    expect(await Promise.all(all)).toEqual(["a1", "a2", "a3", "a4", "b1"]);
    expect(h.order).toEqual(["a1", "a2", "b1", "a3", "a4"]);
    expect(slots.active()).toBe(0);
  });

  it("shares the slots between accounts: one account's lines never keep another waiting for all of them", async () => {
    const slots = fairSlots({ perProcess: 4 });
    const h = harness(slots);
    // Account a alone takes every slot, and queues four more.
    const runs = Array.from({ length: 8 }, (_, i) => h.task("a", `a-line${i}`, `a${i}`));
    await h.settle();
    expect(h.order).toEqual(["a0", "a1", "a2", "a3"]);
    // b and c arrive: each slot a frees goes to an account under its share (half the slots) by turns.
    runs.push(h.task("b", "b-line", "b0"), h.task("b", "b-line2", "b1"), h.task("c", "c-line", "c0"));
    await h.settle();
    await h.release("a0");
    await h.release("a1");
    // b and c, never served, go first; a, down to half the slots (2), has its turn again next.
    expect(h.order.slice(4)).toEqual(["b0", "c0"]);
    await h.release("a2");
    expect(h.order.slice(6)).toEqual(["a4"]);
    await h.release("a3");
    expect(h.order.slice(7)).toEqual(["b1"]); // b was served before a was
    expect(h.running().sort()).toEqual(["a4", "b0", "b1", "c0"]);
    while (h.running().length) await h.release(h.running()[0]!);
    await Promise.all(runs);
    expect(slots.active()).toBe(0);
  });

  it("bounds an account's wait: past it run() refuses at once, and other accounts still queue", async () => {
    const slots = fairSlots({ perProcess: 1, waitingPerAccount: 2, busy: "full" });
    const h = harness(slots);
    const runs = [h.task("a", "l", "a0"), h.task("a", "l", "a1"), h.task("a", "l", "a2")];
    await h.settle();
    await expect(h.task("a", "l", "a3")).rejects.toThrow("full");
    runs.push(h.task("b", "m", "b0"));
    await h.settle();
    await h.release("a0");
    expect(h.order).toEqual(["a0", "b0"]);
    while (h.running().length) await h.release(h.running()[0]!);
    expect(await Promise.all(runs)).toEqual(["a0", "a1", "a2", "b0"]);
  });

  it("frees the slot when a task fails", async () => {
    const slots = fairSlots({ perProcess: 1, perLine: 1 });
    const owner = { accountId: "a", lineId: "l" };
    await expect(slots.run(owner, async () => Promise.reject(new Error("gone")))).rejects.toThrow("gone");
    expect(await slots.run(owner, async () => "next")).toBe("next");
  });
});

import { describe, expect, it } from "vitest";
import { listenLoopback, refusedUrl } from "../../tests/fakes/http";
import { exchange, excerpt, retryAfterMs, scrubber, TransportError } from "./http";

// The provider transport on its own: caps, what a failure proves, Retry-After, scrubbing.

const failure = (p: Promise<unknown>) => p.then(() => null, (e: unknown) => e as TransportError);

describe("exchange", () => {
  it("caps a body by the answer's status when asked, and says which answer it was", async () => {
    const server = await listenLoopback((req, res) => {
      res.writeHead(req.url === "/ok" ? 200 : 500, { "content-type": "text/plain" });
      res.end("x".repeat(500));
    });
    try {
      const maxBytes = (status: number) => (status === 200 ? 1_000 : 100);
      expect((await exchange(`${server.url}/ok`, { method: "GET", timeoutMs: 2_000, maxBytes })).body.byteLength).toBe(500);
      const e = await failure(exchange(`${server.url}/bad`, { method: "GET", timeoutMs: 2_000, maxBytes }));
      expect(e).toMatchObject({ kind: "too_large", status: 500, sentRequest: true, message: "answer larger than 100 bytes (HTTP 500)" });
    } finally {
      await server.close();
    }
  });

  it("a refused connection was not sent; a stalled body is a timeout whose outcome is unknown", async () => {
    const refused = await failure(exchange(await refusedUrl(), { method: "POST", body: "x", timeoutMs: 2_000, maxBytes: 100 }));
    expect(refused).toMatchObject({ kind: "network", sentRequest: false, code: "ECONNREFUSED", status: null });
    expect(refused!.message).toContain("request not sent");
    const server = await listenLoopback((_req, res) => {
      res.writeHead(200);
      res.write("partial");
    });
    try {
      const stalled = await failure(exchange(server.url, { method: "GET", timeoutMs: 200, maxBytes: 100 }));
      expect(stalled).toBeInstanceOf(TransportError);
      expect(stalled).toMatchObject({ kind: "timeout", sentRequest: true, message: expect.stringContaining("outcome unknown") });
    } finally {
      await server.close();
    }
  });

  it("a connection lost mid-body is a network failure with the answer's status; a chunked body over the cap is dropped", async () => {
    const server = await listenLoopback((req, res) => {
      if (req.url === "/cut") {
        res.writeHead(200, { "content-length": "100" });
        res.write("half", () => res.socket?.destroy());
      } else {
        res.writeHead(200); // chunked: no length to judge by, so the cap is applied while reading
        res.write("y".repeat(80));
        res.end("y".repeat(80));
      }
    });
    try {
      const cut = await failure(exchange(`${server.url}/cut`, { method: "GET", timeoutMs: 2_000, maxBytes: 1_000 }));
      expect(cut).toMatchObject({ kind: "network", status: 200, sentRequest: true, message: expect.stringContaining("while reading the answer") });
      const big = await failure(exchange(`${server.url}/big`, { method: "GET", timeoutMs: 2_000, maxBytes: 100 }));
      expect(big).toMatchObject({ kind: "too_large", status: 200 });
      // The pool is still usable after both.
      expect((await exchange(`${server.url}/big`, { method: "GET", timeoutMs: 2_000, maxBytes: 1_000 })).body.byteLength).toBe(160);
    } finally {
      await server.close();
    }
  });
});

describe("helpers", () => {
  it("reads Retry-After as seconds or an HTTP date", () => {
    const now = Date.UTC(2026, 10, 25, 8, 0, 0);
    expect(retryAfterMs(new Headers({ "retry-after": " 12 " }), now)).toBe(12_000);
    expect(retryAfterMs(new Headers({ "retry-after": new Date(now + 30_000).toUTCString() }), now)).toBe(30_000);
    expect(retryAfterMs(new Headers({ "retry-after": "soon" }), now)).toBeNull();
    expect(retryAfterMs(new Headers(), now)).toBeNull();
  });

  it("scrubs every secret, the longer first, and leaves those too short to hide anything", () => {
    const scrub = scrubber(["hunter2", "hunter22", "pw", "", null, undefined]);
    expect(scrub("hunter22 and hunter2 and pw")).toBe("*** and *** and pw");
    expect(excerpt("  two\n\nlines  ", 200)).toBe("two lines");
    expect(excerpt("x".repeat(10), 5)).toBe("xxxx…");
  });
});

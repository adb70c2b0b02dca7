import dns from "node:dns";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { postWebhook } from "./http-post";

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

let handler: Handler = (_req, res) => res.end();
let connections = 0;
const server = http.createServer((req, res) => handler(req, res));
server.on("connection", () => connections++);
let base = "";

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterEach(() => vi.restoreAllMocks());

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const dev = { allowInsecure: true };
const body = JSON.stringify({ event: "message.received" });

describe("postWebhook", () => {
  it("POSTs the body and headers and reports a 2xx with a truncated excerpt", async () => {
    let seen: { method?: string; headers?: http.IncomingHttpHeaders; body?: string } = {};
    handler = (req, res) => {
      let text = "";
      req.on("data", (c: Buffer) => (text += c));
      req.on("end", () => {
        seen = { method: req.method, headers: req.headers, body: text };
        res.end("x".repeat(5000));
      });
    };
    const r = await postWebhook(`${base}/hook?a=1`, body, { "Content-Type": "application/json", "X-Webhook-Delivery-Id": "dlv_1" }, dev);
    expect(r).toMatchObject({ ok: true, statusCode: 200, error: null, retryAfterMs: null, gone: false });
    expect(r.responseExcerpt).toBe("x".repeat(1024));
    expect(r.durationMs).toBeGreaterThanOrEqual(0);
    expect(seen.method).toBe("POST");
    expect(seen.body).toBe(body);
    expect(seen.headers).toMatchObject({ "user-agent": "Relay-Webhooks/1.0", "x-webhook-delivery-id": "dlv_1", "content-type": "application/json" });
  });

  it("reports 500, 410 gone and 429 with Retry-After", async () => {
    handler = (_req, res) => res.writeHead(500).end("boom");
    expect(await postWebhook(base, body, {}, dev)).toMatchObject({ ok: false, statusCode: 500, responseExcerpt: "boom", error: null, gone: false });

    handler = (_req, res) => res.writeHead(410).end();
    expect(await postWebhook(base, body, {}, dev)).toMatchObject({ ok: false, statusCode: 410, gone: true, responseExcerpt: "" });

    handler = (_req, res) => res.writeHead(429, { "Retry-After": "7" }).end();
    expect(await postWebhook(base, body, {}, dev)).toMatchObject({ ok: false, statusCode: 429, retryAfterMs: 7000 });

    const later = new Date(Date.now() + 60_000).toUTCString();
    handler = (_req, res) => res.writeHead(503, { "Retry-After": later }).end();
    const r = await postWebhook(base, body, {}, dev);
    expect(r.retryAfterMs).toBeGreaterThan(50_000);
    expect(r.retryAfterMs).toBeLessThanOrEqual(60_000);

    handler = (_req, res) => res.writeHead(500, { "Retry-After": "7" }).end();
    expect((await postWebhook(base, body, {}, dev)).retryAfterMs).toBeNull();
  });

  it("does not follow redirects", async () => {
    let hits = 0;
    handler = (req, res) => {
      hits++;
      res.writeHead(302, { Location: `${base}/elsewhere` }).end();
    };
    expect(await postWebhook(`${base}/hook`, body, {}, dev)).toMatchObject({ ok: false, statusCode: 302, error: null });
    expect(hits).toBe(1);
  });

  it("times out when the receiver never answers", async () => {
    handler = () => {};
    const r = await postWebhook(base, body, {}, { ...dev, timeoutMs: 300 });
    expect(r).toMatchObject({ ok: false, statusCode: null, responseExcerpt: null, error: "timed out after 300 ms" });
  });

  it("keeps the status when only the body stalls past the deadline", async () => {
    handler = (_req, res) => {
      res.writeHead(200);
      res.write("partial");
    };
    const r = await postWebhook(base, body, {}, { ...dev, timeoutMs: 300 });
    expect(r).toMatchObject({ ok: true, statusCode: 200, responseExcerpt: "partial", error: null });
  });

  it("keeps the status when the connection drops mid-body, and reports a drop before the status as an error", async () => {
    handler = (_req, res) => {
      res.writeHead(503, { "Content-Length": "100", "Retry-After": "3" });
      res.write("half of it", () => res.socket?.destroy());
    };
    expect(await postWebhook(base, body, {}, dev)).toMatchObject({ ok: false, statusCode: 503, responseExcerpt: "half of it", retryAfterMs: 3000, error: null });

    handler = (req) => req.socket.destroy();
    const r = await postWebhook(base, body, {}, dev);
    expect(r).toMatchObject({ ok: false, statusCode: null, responseExcerpt: null });
    expect(r.error).toMatch(/socket hang up|connection reset/);
  });

  it("reports a refused connection", async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    expect(await postWebhook(`http://127.0.0.1:${port}/`, body, {}, dev)).toMatchObject({ ok: false, statusCode: null, error: "connection refused" });
  });
});

describe("postWebhook without allowInsecure", () => {
  const prod = { allowInsecure: false };

  it("refuses http URLs", async () => {
    expect((await postWebhook(`${base}/hook`, body, {}, prod)).error).toBe("url must use https");
  });

  it("refuses local targets without connecting", async () => {
    const before = connections;
    const port = new URL(base).port;
    expect((await postWebhook(`https://127.0.0.1:${port}/`, body, {}, prod)).error).toBe(
      "destination not allowed (private, loopback, link-local or metadata addresses are not allowed)",
    );
    expect((await postWebhook(`https://localhost:${port}/`, body, {}, prod)).error).toMatch(/^destination not allowed \(local host names/);
    expect(connections).toBe(before);
  });

  it("refuses a public-looking name that resolves to loopback (DNS rebinding)", async () => {
    const before = connections;
    const lookup = vi.spyOn(dns, "lookup").mockImplementation(((_host: string, _opts: unknown, cb: (...args: unknown[]) => void) =>
      cb(null, [{ address: "127.0.0.1", family: 4 }])) as never);
    const r = await postWebhook(`https://rebind.example.com:${new URL(base).port}/`, body, {}, prod);
    expect(lookup).toHaveBeenCalled();
    expect(r).toMatchObject({
      ok: false,
      statusCode: null,
      // Never the address the name resolved to: that would map the server's network for whoever chose the URL.
      error: "destination not allowed (private, loopback, link-local or metadata addresses are not allowed)",
    });
    expect(r.error).not.toContain("127.0.0.1");
    expect(connections).toBe(before);
  });
});

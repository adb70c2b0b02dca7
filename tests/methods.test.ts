import http from "node:http";
import net, { type AddressInfo } from "node:net";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { POST as benchEcho } from "@/app/api/bench/echo/route";
import { resetConfig } from "@/server/kernel/config";
import { clientIp } from "@/server/transports/http/client-ip";
import { installHttpHook } from "@/server/transports/ops/http-hook";
import { call, dispatch, expectRequestId, inbound, makeAccount } from "./helpers";

// Methods no route serves, requests Node's parser refuses, and bodies that are not JSON: each
// answers the JSON envelope with a request_id, on a real node:http server with the HTTP hook,
// as every server of the process has it (`next dev`, `next start`, `npm start`). Requests the
// hook lets through go to the app's route modules, as Next would route them.

let server: http.Server;
let port: number;

beforeAll(async () => {
  installHttpHook();
  server = http.createServer(async (req, res) => {
    if (req.url === "/client-ip") {
      // What the sign-in and sign-up limits see as the caller's address.
      const headers = new Headers(Object.entries(req.headers).filter((e): e is [string, string] => typeof e[1] === "string"));
      res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify({ ip: clientIp(headers) }));
      return;
    }
    const body = req.method === "GET" || req.method === "HEAD" ? undefined : (Readable.toWeb(req) as ReadableStream<Uint8Array>);
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers.set(k, v);
    const response = await dispatch(new Request(`http://127.0.0.1:${port}${req.url}`, { method: req.method, headers, body, duplex: "half" } as RequestInit));
    res.writeHead(response.status, Object.fromEntries(response.headers));
    res.end(Buffer.from(await response.arrayBuffer()));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: { error?: { type: string; code: string; message: string }; request_id?: string } | null;
}

function send(method: string, path: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, method, path, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString();
        resolve({ status: res.statusCode!, headers: res.headers, body: text ? JSON.parse(text) : null });
      });
    });
    req.on("error", reject);
    req.end();
  });
}

/** Raw bytes to the server; its whole answer (it closes the connection). */
function raw(bytes: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1", () => socket.write(bytes));
    const chunks: Buffer[] = [];
    socket.on("data", (c: Buffer) => chunks.push(c));
    socket.on("error", reject);
    socket.on("close", () => {
      const text = Buffer.concat(chunks).toString();
      const [head, body] = [text.slice(0, text.indexOf("\r\n\r\n")), text.slice(text.indexOf("\r\n\r\n") + 4)];
      const [statusLine, ...lines] = head.split("\r\n");
      const headers: http.IncomingHttpHeaders = {};
      for (const line of lines) headers[line.slice(0, line.indexOf(":")).toLowerCase()] = line.slice(line.indexOf(":") + 1).trim();
      resolve({ status: Number(statusLine!.split(" ")[1]), headers, body: body ? JSON.parse(body) : null });
    });
  });
}

function expectEnvelope(res: Answer, status: number, code: string) {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.headers["content-type"]).toContain("application/json");
  expect(res.body?.error?.code).toBe(code);
  expect(res.body?.request_id).toMatch(/^req_/);
  expect(res.headers["request-id"]).toBe(res.body?.request_id);
}

describe("methods no route serves answer the JSON envelope", () => {
  it("TRACE on any route is 405 method_not_allowed with Allow (Next failed with a plain-text 500)", async () => {
    for (const [path, allow] of [
      ["/healthz", "GET, HEAD"],
      ["/v1/chats?from=x", "GET, POST, PATCH, DELETE, OPTIONS"],
      ["/v1/messages", "GET, POST, PATCH, DELETE, OPTIONS"],
      ["/api/graphql", "GET, POST, OPTIONS"],
      ["/api/inbound/ln_01m8911r1svcjbnws49kkjf72s?token=x", "POST"],
      ["/dashboard", "GET, HEAD, POST"],
    ] as const) {
      const res = await send("TRACE", path);
      expectEnvelope(res, 405, "method_not_allowed");
      expect(res.body?.error?.type).toBe("invalid_request_error");
      expect(res.headers.allow, path).toBe(allow);
    }
  });

  it("PROPFIND and other unknown methods under /v1 are 404 route_not_found (Next answered an empty 400); elsewhere 405", async () => {
    for (const method of ["PROPFIND", "MKCOL", "PURGE"]) {
      const res = await send(method, "/v1/chats");
      expectEnvelope(res, 404, "route_not_found");
      expect(res.body?.error?.message).toContain(`${method}: /v1/chats`);
    }
    const inbound = await send("PROPFIND", "/api/inbound/ln_01m8911r1svcjbnws49kkjf72s");
    expectEnvelope(inbound, 405, "method_not_allowed");
    expect(inbound.headers.allow).toBe("POST");
  });

  it("GET, PUT, PATCH and DELETE on an inbound URL are 405 with Allow: POST (Next answered an empty 405)", async () => {
    for (const method of ["GET", "PUT", "PATCH", "DELETE"]) {
      const res = await send(method, "/api/inbound/ln_01m8911r1svcjbnws49kkjf72s?token=abc");
      expectEnvelope(res, 405, "method_not_allowed");
      expect(res.headers.allow).toBe("POST");
    }
  });
});

describe("requests Node's HTTP parser refuses answer the envelope with a Request-Id", () => {
  it("headers over the limit: 431 request_headers_too_large", async () => {
    const res = await raw(`GET /v1/chats HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`);
    expectEnvelope(res, 431, "request_headers_too_large");
    expect(res.headers.connection).toBe("close");
  });

  it("control characters in a header: 400 malformed_request", async () => {
    const res = await raw("GET /v1/chats HTTP/1.1\r\nHost: x\r\nX-Bad: a\u0001b\r\n\r\n");
    expectEnvelope(res, 400, "malformed_request");
  });

  it("a method the parser does not know: 405 method_not_allowed", async () => {
    const res = await raw("FROBNICATE /v1/chats HTTP/1.1\r\nHost: x\r\n\r\n");
    expectEnvelope(res, 405, "method_not_allowed");
    expect(res.headers.allow).toContain("GET");
  });
});

describe("JSON body routes refuse other content types", () => {
  it("POST /v1/messages with JSON sent as text/plain (or no type) is 415 unsupported_media_type; application/json goes on", async () => {
    const f = await makeAccount();
    await inbound(f, "+15550001234"); // the contact has written first, so a send may go out
    const message = JSON.stringify({ from: f.line.handle, to: "+15550001234", text: "hi" });
    const cases: Record<string, string>[] = [{ "content-type": "text/plain" }, { "content-type": "application/x-www-form-urlencoded" }, { "content-type": "text/plain", "content-length": String(message.length) }];
    for (const headers of cases) {
      const res = await call("POST", "/v1/messages", { key: f.key, raw: message, headers });
      expect(res.status, JSON.stringify(headers)).toBe(415);
      expect(res.body.error).toMatchObject({ type: "invalid_request_error", code: "unsupported_media_type" });
      expectRequestId(res);
    }
    const webhook = await call("POST", "/v1/webhooks", { key: f.key, raw: JSON.stringify({ url: "https://example.com/h" }), headers: { "content-type": "text/plain;charset=UTF-8" } });
    expect(webhook.status).toBe(415);
    const ok = await call("POST", "/v1/messages", { key: f.key, raw: message, headers: { "content-type": "application/json; charset=utf-8" } });
    expect(ok.status).toBe(200);
    // An empty body is {} whatever its type (routes with optional bodies).
    const empty = await call("POST", "/v1/messages", { key: f.key, raw: "", headers: { "content-type": "text/plain" } });
    expect(empty.body.error.code).toBe("missing_required_parameter");
  });
});

describe("POST /api/bench/echo without BENCH_ECHO", () => {
  it("answers 404 route_not_found without reading the body", async () => {
    let pulled = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled++;
        if (pulled > 1024) controller.close(); // 64 MiB in all, were it read
        else controller.enqueue(new Uint8Array(64 * 1024));
      },
    });
    const res = await benchEcho(new Request("http://localhost:3000/api/bench/echo", { method: "POST", body: stream, duplex: "half" } as RequestInit));
    expect(res.status).toBe(404);
    expect((await res.json()).error.code).toBe("route_not_found");
    expect(pulled).toBeLessThanOrEqual(1); // a stream may pull once when it is set up; never the body
  });
});

describe("the client address of the per-address sign-in and sign-up limits", () => {
  async function seen(forwardedFor: string): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const req = http.request({ host: "127.0.0.1", port, path: "/client-ip", headers: { "x-forwarded-for": forwardedFor }, agent: false }, (res) => {
        let text = "";
        res.on("data", (c: Buffer) => (text += c));
        res.on("end", () => resolve((JSON.parse(text) as { ip: unknown }).ip));
      });
      req.on("error", reject);
      req.end();
    });
  }

  it("is the connection's address without TRUST_PROXY_HOPS (a forged X-Forwarded-For is ignored), else the entry that many hops from the right", async () => {
    try {
      expect(await seen("198.51.100.7")).toBe("127.0.0.1");
      process.env.TRUST_PROXY_HOPS = "1";
      resetConfig();
      expect(await seen("198.51.100.7, 203.0.113.9")).toBe("203.0.113.9");
      expect(await seen("not-an-address")).toBeNull();
    } finally {
      delete process.env.TRUST_PROXY_HOPS;
      resetConfig();
    }
  });
});

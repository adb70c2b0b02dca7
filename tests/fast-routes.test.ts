import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { config } from "@/server/kernel/config";
import { fastRouteTable } from "@/server/transports/http/v1-routes";
import { MCP_ROUTE } from "@/server/transports/mcp/http";
import { registerFastRoutes } from "@/server/transports/http/fast-routes";
import { type FakeBlueBubbles, startFakeBlueBubbles } from "./fakes/bluebubbles";
import { type FakeTwilio, startFakeTwilio } from "./fakes/twilio";
import { blueBubblesLine, db, dispatch, fakeTwilioLine, inbound as textLine, makeAccount, phone } from "./helpers";

// The routes the production server (scripts/start.mjs) answers on Node's own request and
// response, before Next: provider webhooks, and the /v1 operations (server/transports/http/v1-routes.ts). Served here by a real node:http listener on a
// loopback port with the same table the start script uses, and compared with the route file
// (which `next dev` and the other tests use): same status, same envelope, same codes.

let server: http.Server;
let base = "";
/** Webhook bodies the fake sent, as they were sent. */
const sent: string[] = [];

beforeAll(async () => {
  const routes = registerFastRoutes({ ...fastRouteTable(), "/api/mcp": MCP_ROUTE });
  server = http.createServer((req, res) => {
    const handler = routes.route(req);
    if (!handler) return void res.writeHead(418, { "content-type": "text/plain" }).end("for Next");
    void handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

const fakes: FakeBlueBubbles[] = [];
afterAll(async () => {
  await Promise.all(fakes.map((f) => f.close()));
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

/** The fake's webhooks go to the fast route: the registered URL, on our listener. */
async function deliver(url: string, body: { type: string; data: unknown }): Promise<void> {
  const u = new URL(url);
  const text = JSON.stringify(body);
  sent.push(text);
  await fetch(`${base}${u.pathname}${u.search}`, { method: "POST", headers: { "content-type": "application/json" }, body: text });
}

async function connectedLine() {
  const bb = await startFakeBlueBubbles({ deliver });
  fakes.push(bb);
  const { line } = await blueBubblesLine(bb);
  const inbound = new URL(bb.webhooks.at(-1)!.url);
  return { bb, lineId: line.id, path: `${inbound.pathname}${inbound.search}`, pathname: inbound.pathname };
}

/** A raw HTTP exchange (status, headers, body), for what fetch would hide or refuse to send. */
function raw(options: http.RequestOptions, body?: string | ((req: http.ClientRequest) => void)) {
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; json: Record<string, unknown> }>((resolve, reject) => {
    const req = http.request(`${base}${options.path}`, { method: "POST", ...options }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, json: JSON.parse(Buffer.concat(chunks).toString("utf8")) }));
    });
    req.on("error", reject);
    if (typeof body === "function") body(req);
    else req.end(body);
  });
}

async function storedGuids(lineId: string) {
  return (await (await db()).message.findMany({ where: { lineId }, select: { guid: true } })).map((m) => m.guid);
}

describe("provider webhooks on the production server's own listener", () => {
  it("takes in a BlueBubbles message once, however often it is delivered", async () => {
    const { bb, lineId, path } = await connectedLine();
    const m = bb.receive({ from: phone(), text: "hello over the fast route" });
    await bb.idle();
    expect(await storedGuids(lineId)).toEqual([m.guid]);
    const again = await raw({ path, headers: { "content-type": "application/json" } }, sent.at(-1));
    expect(again.status).toBe(200);
    expect(again.json).toEqual({ object: "inbound_receipt", received: { stored: 0, duplicate: 1, adopted: 0, ignored: 0 }, request_id: again.headers["request-id"] });
    expect(again.headers["content-type"]).toBe("application/json; charset=utf-8");
    // The Host header plays no part in the URL the webhook is read from (a bad one made a 500).
    for (const host of ["bad host", "h?token=wrong#", ""]) {
      const hostile = await raw({ path, headers: { host, "content-type": "application/json" } }, sent.at(-1));
      expect({ status: hostile.status, received: hostile.json.received }, `Host: ${host}`).toEqual({ status: 200, received: again.json.received });
    }
    expect(await storedGuids(lineId)).toEqual([m.guid]);
  });

  it("answers as the route file does, for a good body and for bad ones", async () => {
    const { bb, path } = await connectedLine();
    bb.receive({ from: phone(), text: "compare" });
    await bb.idle();
    const wrongToken = path.replace(/token=[^&]+/, "token=wrong");
    for (const [p, body] of [
      [path, sent.at(-1)!],
      [path, "<html>not json</html>"],
      [path, JSON.stringify({ type: "new-message", data: { nothing: true } })],
      [wrongToken, sent.at(-1)!],
      [path.replace(/\?.*/, ""), sent.at(-1)!],
    ] as const) {
      const fast = await raw({ path: p, headers: { "content-type": "application/json" } }, body);
      const next = await dispatch(new Request(`http://localhost:3000${p}`, { method: "POST", headers: { "content-type": "application/json" }, body }));
      const nextJson = (await next.json()) as Record<string, unknown>;
      expect({ status: fast.status, body: { ...fast.json, request_id: "x" } }).toEqual({ status: next.status, body: { ...nextJson, request_id: "x" } });
      expect(fast.json.request_id).toBe(fast.headers["request-id"]);
      expect(fast.json.request_id).toMatch(/^req_/);
    }
  });

  it("refuses a wrong or missing token with 401 and stores nothing", async () => {
    const { bb, lineId, path, pathname } = await connectedLine();
    const body = JSON.stringify({ type: "new-message", data: { ...JSON.parse(sent.at(-1)!).data, guid: "NEVER-STORED" } });
    for (const p of [path.replace(/token=[^&]+/, "token=wrong"), pathname, "/api/inbound/ln_nosuchline?token=x", "/api/inbound/%E0%A4%A?token=x"]) {
      const res = await raw({ path: p, headers: { "content-type": "application/json" } }, body);
      expect(res.status, p).toBe(401);
      expect((res.json.error as { code: string }).code).toBe("invalid_inbound_token");
    }
    expect(await storedGuids(lineId)).not.toContain("NEVER-STORED");
    expect(bb.webhooks.length).toBeGreaterThan(0);
  });

  it("refuses a body over the cap with 413 request_too_large, declared or streamed, and drops the rest rather than resetting the connection", async () => {
    const { path } = await connectedLine();
    const max = config().MAX_JSON_BODY_BYTES;
    // The whole body is sent: a client still writing it must get the answer, not a reset.
    const declared = await raw({ path, headers: { "content-type": "application/json", "content-length": String(max + 1) } }, (req) => req.end("x".repeat(max + 1)));
    expect(declared.status).toBe(413);
    expect((declared.json.error as { code: string }).code).toBe("request_too_large");
    expect(declared.headers.connection).toBe("keep-alive");
    const streamed = await raw({ path, headers: { "content-type": "application/json", "transfer-encoding": "chunked" } }, (req) => {
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      let written = 0;
      const more = () => {
        while (written <= max) {
          written += chunk.length;
          if (!req.write(chunk)) return void req.once("drain", more);
        }
        req.end();
      };
      more();
    });
    expect(streamed.status).toBe(413);
    expect((streamed.json.error as { code: string }).code).toBe("request_too_large");
    expect(streamed.headers.connection).toBe("keep-alive");
    // A client that asked to close (no agent: Connection: close) gets the answer once it has sent all.
    const closing = await raw({ path, agent: false, headers: { "content-type": "application/json", "content-length": String(24 * max) } }, (req) => req.end("x".repeat(24 * max)));
    expect(closing.status).toBe(413);
    expect(closing.headers.connection).toBe("close");
    // Too much to drain (over 64 MiB declared): the connection closes with the answer.
    const huge = await raw({ path, headers: { "content-type": "application/json", "content-length": String(65 * 1024 * 1024) } }, (req) => req.end());
    expect(huge.status).toBe(413);
    expect(huge.headers.connection).toBe("close");
  });

  it("leaves every other request to Next", async () => {
    const { path } = await connectedLine();
    const get = await fetch(`${base}${path}`);
    expect(get.status).toBe(418);
    const nested = await fetch(`${base}/api/inbound/ln_x/more`, { method: "POST", body: "{}" });
    expect(nested.status).toBe(418);
    // Paths not in the table (a stream, a download, unknown or not exactly a route's), and HEAD, which Next derives from GET.
    for (const [method, p] of [
      ["GET", "/v1/listen"],
      ["GET", "/v1/files?id=file_x"],
      ["GET", "/v1/openapi.json"],
      ["GET", "/v1/nope"],
      ["GET", "/v1/chats/"],
      ["GET", "/v1//chats"],
      ["GET", "/V1/chats"],
      ["HEAD", "/v1/chats"],
      ["PROPFIND", "/v1/chats"],
    ] as const) {
      const res = await fetch(`${base}${p}`, { method });
      expect(res.status, `${method} ${p}`).toBe(418);
    }
  });
});

describe("/v1 route files on the production server's own listener", () => {
  /** The same request through the listener and through the route file (as Next calls it), answers compared. */
  async function both(method: string, p: string, headers: Record<string, string> = {}, body?: string) {
    const fast = await fetch(`${base}${p}`, { method, headers, body });
    const next = await dispatch(new Request(`http://localhost:3000${p}`, { method, headers, body }));
    const read = async (r: Response) => {
      const text = await r.text();
      // Request IDs differ between the two answers, wherever they appear (an MCP tool result carries one).
      const json = text ? (JSON.parse(text, (_k, v: unknown) => (typeof v === "string" ? v.replace(/req_[0-9a-z]{26}/g, "req_…") : v)) as Record<string, unknown>) : null;
      return { status: r.status, json: json && { ...json, request_id: typeof json.request_id } };
    };
    const [f, n] = [await read(fast), await read(next)];
    expect(f, `${method} ${p}`).toEqual(n);
    return { fast, status: f.status, json: f.json };
  }
  const headerNames = (r: Response) => [...r.headers.keys()].filter((k) => !["date", "connection", "keep-alive", "content-length", "transfer-encoding"].includes(k)).sort();

  it("answers reads, writes and every refusal as the route file does, with the same headers", async () => {
    const f = await makeAccount();
    const auth = { authorization: `Bearer ${f.key}` };
    const from = phone();
    await textLine(f, from, "hello fast path");
    await both("GET", `/v1/chats?line=${encodeURIComponent(f.line.handle)}`, auth);
    await both("GET", `/v1/messages?from=${encodeURIComponent(f.line.handle)}&limit=5`, auth);
    await both("GET", "/v1/lines", auth);
    await both("GET", "/v1/webhooks", auth);
    await both("GET", "/v1/outbox?limit=2", auth);
    // Refusals: no key, a bad key, a bad query, a missing parameter, a method the route lacks, preflight.
    expect((await both("GET", "/v1/chats")).status).toBe(401);
    expect((await both("GET", "/v1/chats?line=x", { authorization: "Bearer sk_live_nope" })).status).toBe(401);
    expect((await both("GET", "/v1/chats?limit=abc", auth)).status).toBe(400);
    expect((await both("GET", "/v1/messages", auth)).status).toBe(400);
    expect((await both("PUT", "/v1/chats", auth)).status).toBe(404);
    const preflight = await both("OPTIONS", "/v1/messages", { origin: "https://example.com", "access-control-request-method": "POST" });
    expect(preflight.status).toBe(204);
    // Headers: the same names as the route file's (Request-Id, CORS, rate limit), and the body's request_id is the header's.
    const fast = await fetch(`${base}/v1/lines`, { headers: auth });
    const next = await dispatch(new Request("http://localhost:3000/v1/lines", { headers: auth }));
    expect(headerNames(fast)).toEqual(headerNames(next));
    expect(((await fast.json()) as { request_id: string }).request_id).toBe(fast.headers.get("request-id"));
    expect(fast.headers.get("content-length")).not.toBeNull();
  });

  it("reads the request's own path and query whatever the Host header says, and never serves another read from cache", async () => {
    const f = await makeAccount();
    for (let i = 0; i < 3; i++) await textLine(f, phone(), `chat ${i}`);
    /** A GET with this Host header, sent as is: the body without its request_id. */
    const get = (p: string, host: string) =>
      new Promise<{ status: number; body: Record<string, unknown> }>((resolve, reject) => {
        http
          .get(`${base}${p}`, { headers: { host, authorization: `Bearer ${f.key}` } }, (res) => {
            const chunks: Buffer[] = [];
            res.on("data", (c: Buffer) => chunks.push(c));
            res.on("end", () => {
              const { request_id: _id, ...body } = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>;
              resolve({ status: res.statusCode!, body });
            });
          })
          .on("error", reject);
      });
    const page = `/v1/chats?from=${encodeURIComponent(f.line.handle)}&limit=2`;
    const chats = await get(page, "localhost");
    const lines = await get("/v1/lines", "localhost");
    expect(chats.status, JSON.stringify(chats.body)).toBe(200);
    expect((chats.body.data as unknown[]).length).toBe(2);
    expect(chats.body.has_more).toBe(true);
    expect((lines.body.data as { object: string }[])[0]!.object).toBe("line");
    for (const host of ["h?limit=1&x=", "a/b", "a#b", "", "bad host", "h?x=/v1/lines#"]) {
      // Each hostile Host reads /v1/lines first: a cache keyed by a URL the Host header bent would then answer the chats read with it.
      expect(await get("/v1/lines", host), `Host: ${host}`).toEqual(lines);
      expect(await get(page, host), `Host: ${host}`).toEqual(chats);
    }
  });

  it("sends a message once per Idempotency-Key, and refuses bad bodies as the route file does", async () => {
    const f = await makeAccount();
    const from = phone();
    await textLine(f, from, "contact first");
    const headers = { authorization: `Bearer ${f.key}`, "content-type": "application/json", "idempotency-key": `fast-${Date.now()}` };
    const body = JSON.stringify({ from: f.line.handle, to: from, text: "over the fast path" });
    const first = await fetch(`${base}/v1/messages`, { method: "POST", headers, body });
    const firstJson = (await first.json()) as { id: string; status: string };
    expect(first.status).toBe(200);
    expect(firstJson.status).toBe("pending");
    const again = await fetch(`${base}/v1/messages`, { method: "POST", headers, body });
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(((await again.json()) as { id: string }).id).toBe(firstJson.id);
    const items = await (await db()).outboxItem.count({ where: { lineId: f.line.id } });
    expect(items).toBe(1);
    const plain = { authorization: headers.authorization, "content-type": "application/json" };
    expect((await both("POST", "/v1/messages", plain, "{not json")).status).toBe(400);
    expect((await both("POST", "/v1/messages", plain, JSON.stringify({ from: f.line.handle }))).status).toBe(400);
    expect((await both("POST", "/v1/messages", plain, JSON.stringify({ from: "+15550000000", to: from, text: "x" }))).status).toBe(404);
  });

  it("answers the MCP server's tool calls and refusals as its route file does", async () => {
    const f = await makeAccount();
    const headers = { authorization: `Bearer ${f.key}`, "content-type": "application/json", accept: "application/json, text/event-stream" };
    const rpc = (method: string, params: unknown) => JSON.stringify({ jsonrpc: "2.0", id: 1, method, params });
    const list = await both("POST", "/api/mcp", headers, rpc("tools/list", {}));
    expect(list.status).toBe(200);
    type Answer = { result: { tools?: unknown[]; isError?: boolean; structuredContent?: unknown } };
    const result = (x: { json: unknown }) => (x.json as Answer).result;
    expect(result(list).tools).toHaveLength(11);
    const lines = await both("POST", "/api/mcp", headers, rpc("tools/call", { name: "list_lines", arguments: {} }));
    expect(result(lines).isError).toBeUndefined();
    const refused = await both("POST", "/api/mcp", headers, rpc("tools/call", { name: "send_message", arguments: { from: f.line.handle } }));
    expect(result(refused)).toMatchObject({ isError: true, structuredContent: { error: { code: "missing_required_parameter" } } });
    expect((await both("POST", "/api/mcp", { "content-type": "application/json" }, rpc("tools/list", {}))).status).toBe(401);
  });

  it("refuses a JSON body over the cap with 413 request_too_large, unread, and drops the rest rather than resetting the connection", async () => {
    const f = await makeAccount();
    const max = config().MAX_JSON_BODY_BYTES;
    const headers = { authorization: `Bearer ${f.key}`, "content-type": "application/json" };
    const declared = await raw({ path: "/v1/messages", headers: { ...headers, "content-length": String(max + 1) } }, (req) => req.end("x".repeat(max + 1)));
    expect(declared.status).toBe(413);
    expect((declared.json.error as { code: string }).code).toBe("request_too_large");
    expect(declared.headers.connection).toBe("keep-alive");
    const closing = await raw({ path: "/v1/messages", agent: false, headers: { ...headers, "content-length": String(24 * max) } }, (req) => req.end("x".repeat(24 * max)));
    expect(closing.status).toBe(413);
    expect(closing.headers.connection).toBe("close");
    // Too much to drain (over 64 MiB declared): the connection closes with the answer.
    const huge = await raw({ path: "/v1/messages", headers: { ...headers, "content-length": String(65 * 1024 * 1024) } }, (req) => req.end());
    expect(huge.status).toBe(413);
    expect(huge.headers.connection).toBe("close");
  });
});

describe("signed form webhooks on the fast route (Twilio)", () => {
  // Twilio posts to the public URL (PUBLIC_URL + path + query) and signs that; here the
  // request reaches our listener under another host, as behind a reverse proxy.
  let tw: FakeTwilio;
  beforeAll(async () => {
    tw = await startFakeTwilio({
      numbers: [phone()],
      deliver: async (url, init) => {
        const u = new URL(url);
        const res = await fetch(`${base}${u.pathname}${u.search}`, { method: "POST", headers: init.headers, body: init.body });
        return { status: res.status, contentType: res.headers.get("content-type"), body: await res.text() };
      },
    });
  });
  afterAll(() => tw.close());

  it("answers an inbound SMS with empty TwiML as the route file does, stores it once, and refuses bad signatures and content types", async () => {
    const { line: { id: lineId }, inboundUrl } = await fakeTwilioLine(tw);
    const { message, params, answer } = await tw.receive({ from: phone(), body: "over the fast route" });
    expect(answer).toMatchObject({ status: 200, contentType: "text/xml" });
    expect(answer!.body).toBe('<?xml version="1.0" encoding="UTF-8"?><Response/>');
    // The same request again through the route file: the same answer, nothing stored twice.
    const signed = { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": tw.sign(inboundUrl, params) };
    const again = await dispatch(new Request(inboundUrl, { method: "POST", headers: signed, body: new URLSearchParams(params).toString() }));
    expect(again.status).toBe(200);
    expect(again.headers.get("content-type")).toBe("text/xml");
    expect(await again.text()).toBe(answer!.body);
    expect((await storedGuids(lineId)).filter((g) => g === message.sid)).toHaveLength(1);

    const path = new URL(inboundUrl).pathname + new URL(inboundUrl).search;
    const forged = [...params.filter(([k]) => k !== "Body" && k !== "MessageSid"), ["Body", "forged"], ["MessageSid", "SMforged"]] as [string, string][];
    const badSig = await raw({ path, headers: { ...signed, "x-twilio-signature": tw.sign(inboundUrl, params) } }, new URLSearchParams(forged).toString());
    expect(badSig.status).toBe(403);
    expect((badSig.json.error as { code: string }).code).toBe("invalid_signature");
    const json = await raw({ path, headers: { "content-type": "application/json", "x-twilio-signature": tw.sign(inboundUrl, []) } }, "{}");
    expect(json.status).toBe(415);
    expect((json.json.error as { code: string }).code).toBe("unsupported_media_type");
    expect(await storedGuids(lineId)).not.toContain("SMforged");

    // Signed exactly over a URL without the line's token: 401 invalid_inbound_token, nothing stored.
    const { params: noToken } = await tw.receive({ from: phone(), body: "no token", deliver: false });
    const bareUrl = inboundUrl.replace(/\?.*$/, "");
    const bare = await raw(
      { path: new URL(bareUrl).pathname, headers: { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": tw.sign(bareUrl, noToken) } },
      new URLSearchParams(noToken).toString(),
    );
    expect(bare.status).toBe(401);
    expect((bare.json.error as { code: string }).code).toBe("invalid_inbound_token");
    expect(bare.json.request_id).toBe(bare.headers["request-id"]);
    expect(await storedGuids(lineId)).toHaveLength(1);
  });
});

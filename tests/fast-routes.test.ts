import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { config } from "@/server/config";
import { registerFastRoutes } from "@/server/http/fast-routes";
import { type FakeBlueBubbles, startFakeBlueBubbles } from "./fakes/bluebubbles";
import { type FakeTwilio, startFakeTwilio } from "./fakes/twilio";
import { blueBubblesLine, db, dispatch, fakeTwilioLine, phone } from "./helpers";

// The routes the production server (scripts/start.mjs) answers on Node's own request and
// response, before Next: provider webhooks. Served here by a real node:http listener on a
// loopback port with the same table the start script uses, and compared with the route file
// (which `next dev` and the other tests use): same status, same envelope, same codes.

let server: http.Server;
let base = "";
/** Webhook bodies the fake sent, as they were sent. */
const sent: string[] = [];

beforeAll(async () => {
  const routes = registerFastRoutes();
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

  it("refuses a body over the cap with 413 request_too_large, declared or streamed, and closes the connection", async () => {
    const { path } = await connectedLine();
    const max = config().MAX_JSON_BODY_BYTES;
    const declared = await raw({ path, headers: { "content-type": "application/json", "content-length": String(max + 1) } }, (req) => req.end());
    expect(declared.status).toBe(413);
    expect((declared.json.error as { code: string }).code).toBe("request_too_large");
    expect(declared.headers.connection).toBe("close");
    const streamed = await raw({ path, headers: { "content-type": "application/json", "transfer-encoding": "chunked" } }, (req) => {
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      let written = 0;
      const more = () => {
        while (written <= max && !req.destroyed) {
          written += chunk.length;
          if (!req.write(chunk)) return void req.once("drain", more);
        }
        req.end();
      };
      req.on("error", () => undefined); // the server may close while we still write
      more();
    });
    expect(streamed.status).toBe(413);
    expect((streamed.json.error as { code: string }).code).toBe("request_too_large");
  });

  it("leaves every other request to Next", async () => {
    const { path } = await connectedLine();
    const get = await fetch(`${base}${path}`);
    expect(get.status).toBe(418);
    const other = await fetch(`${base}/v1/messages`, { method: "POST", body: "{}" });
    expect(other.status).toBe(418);
    const nested = await fetch(`${base}/api/inbound/ln_x/more`, { method: "POST", body: "{}" });
    expect(nested.status).toBe(418);
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

import http from "node:http";
import type net from "node:net";
import { gunzipSync } from "node:zlib";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifyWebhook } from "../server/webhooks/signing";
import { type TestServer, testServer } from "./harness";

// The production server as a user runs it: `next start` on embedded PGlite in a fresh
// DATA_DIR, set up with the operator CLI while it runs, driven only over HTTP.

let app: TestServer;
let base = "";
const server = () => app.process();
const start = () => app.start();
const stop = () => app.stop();
const admin = (...args: string[]) => app.admin(...args);

/**
 * Ten concurrent lanes each call `send(i, lane)` (i counting up per lane) until `killAfter`
 * requests were accepted, then the server is killed (SIGKILL) while the others are still in
 * flight; resolves with the accepted IDs once it has exited. `send` returns the accepted ID or
 * null.
 */
async function sendUntilKilled(killAfter: number, send: (i: number, lane: number) => Promise<string | null>): Promise<string[]> {
  const accepted: string[] = [];
  let killed = false;
  const died = new Promise((r) => server().once("exit", r));
  await Promise.all(
    Array.from({ length: 10 }, async (_, lane) => {
      for (let i = lane; !killed; i += 10) {
        try {
          const id = await send(i, lane);
          if (id) accepted.push(id);
        } catch {
          return; // the server is gone
        }
        if (accepted.length >= killAfter && !killed) {
          killed = true;
          server().kill("SIGKILL");
        }
      }
    }),
  );
  await died;
  return accepted;
}

beforeAll(async () => {
  // The test's webhook receiver is plain HTTP on loopback.
  app = await testServer({ WEBHOOK_ALLOW_INSECURE: "true" });
  base = app.base;
});

afterAll(() => app.dispose());

describe("/v1 against npm start", () => {
  let key = "";
  let firstMessageId = "";
  const line = "+15550004242";

  it("is set up by the operator CLI while the server runs", () => {
    admin("account", "create", "--email", "e2e@example.com", "--password", "e2e password 123");
    admin("line", "create", "--account", "e2e@example.com", "--handle", line, "--advanced");
    key = admin("key", "create", "--account", "e2e@example.com", "--name", "e2e");
    expect(key).toMatch(/^sk_live_/);
  });

  it("answers provider webhooks on the start script's own listener, not through Next", async () => {
    // Next's answers carry its router's Vary header; the fast route (server/transports/http/fast-routes.ts) answers alone.
    const hook = await fetch(`${base}/api/inbound/ln_nosuchline?token=x`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(hook.status).toBe(401);
    expect((await hook.json()).error.code).toBe("invalid_inbound_token");
    expect(hook.headers.get("request-id")).toMatch(/^req_/);
    expect(hook.headers.get("vary")).toBe("Accept-Encoding"); // Next's compression's, not its router's
    const viaNext = await fetch(`${base}/api/inbound/ln_nosuchline?token=x`, { method: "PUT" });
    expect(viaNext.status).toBe(405);
    expect(viaNext.headers.get("vary")).toContain("rsc");
  });

  it("authenticates, serves reads, ingests simulated traffic and hands out working file links", async () => {
    const auth = { authorization: `Bearer ${key}` };
    const anon = await fetch(`${base}/v1/lines`);
    expect(anon.status).toBe(401);
    expect((await anon.json()).error.code).toBe("missing_api_key");

    const lines = await (await fetch(`${base}/v1/lines`, { headers: auth })).json();
    expect(lines.data.map((l: { handle: string }) => l.handle)).toContain(line);

    const sent = await fetch(`${base}/api/simulator/messages`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({
        line,
        from: "+15550001111",
        text: "hello from e2e",
        attachment: { filename: "note.txt", mime_type: "text/plain", content_base64: Buffer.from("file body").toString("base64") },
      }),
    });
    expect(sent.status).toBe(201);
    const message = await sent.json();
    firstMessageId = message.id;

    const chats = await (await fetch(`${base}/v1/chats?from=${encodeURIComponent(line)}`, { headers: auth })).json();
    expect(chats.data[0]).toMatchObject({ identifier: "+15550001111", has_received_inbound: true });
    const messages = await (await fetch(`${base}/v1/messages?from=${encodeURIComponent(line)}`, { headers: auth })).json();
    expect(messages.data[0]).toMatchObject({ id: message.id, text: "hello from e2e" });

    const file = await fetch(messages.data[0].attachments[0].url);
    expect(file.status).toBe(200);
    expect(await file.text()).toBe("file body");

    // Send a reply: accepted as pending, then delivered by the embedded runner.
    const started = Date.now();
    const accepted = await fetch(`${base}/v1/messages`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ from: line, to: "+15550001111", text: "reply from e2e" }),
    });
    expect(accepted.status).toBe(200);
    const { id: outboxId, status } = await accepted.json();
    expect(status).toBe("pending");
    let item = { status: "pending" };
    while (item.status === "pending" || item.status === "claimed") {
      expect(Date.now() - started).toBeLessThan(10_000);
      item = await (await fetch(`${base}/v1/outbox?id=${outboxId}`, { headers: auth })).json();
    }
    expect(item.status).toBe("sent");
    const after = await (await fetch(`${base}/v1/messages?from=${encodeURIComponent(line)}`, { headers: auth })).json();
    expect(after.data[0]).toMatchObject({ text: "reply from e2e", is_from_me: true, outbox_id: outboxId });

    const notFound = await fetch(`${base}/v1/unknown`, { headers: auth });
    expect(notFound.status).toBe(404);
    expect((await notFound.json()).error.code).toBe("route_not_found");
    const preflight = await fetch(`${base}/v1/messages`, { method: "OPTIONS" });
    expect(preflight.status).toBe(204);
    // Without INNGEST_* the embedded runner delivers: /api/inngest is a plain JSON 404, not a 500.
    const inngest = await fetch(`${base}/api/inngest`);
    expect(inngest.status).toBe(404);
    expect((await inngest.json()).error.code).toBe("route_not_found");
  });

  it("answers /v1 routes on the start script's own listener, compressed as Next compresses", async () => {
    const auth = { authorization: `Bearer ${key}` };
    // A page of messages is over compression's 1 KiB threshold: gzip for a client that accepts it (Next's compression middleware).
    const page = `${base}/v1/messages?from=${encodeURIComponent(line)}`;
    const plain = await fetch(page, { headers: { ...auth, "accept-encoding": "identity" } });
    expect(plain.status).toBe(200);
    expect(plain.headers.get("vary")).toBe("Accept-Encoding");
    expect(plain.headers.get("content-encoding")).toBeNull();
    const plainText = await plain.text();
    expect(plainText.length).toBeGreaterThan(1024);
    const plainBody = JSON.parse(plainText);
    expect(plainBody.request_id).toBe(plain.headers.get("request-id"));
    const gzip = await new Promise<{ headers: http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
      http.get(page, { headers: { ...auth, "accept-encoding": "gzip" } }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c)).on("end", () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
      }).on("error", reject);
    });
    expect(gzip.headers["content-encoding"]).toBe("gzip");
    const unzipped = JSON.parse(gunzipSync(gzip.body).toString("utf8"));
    expect(unzipped.data).toEqual(plainBody.data);
    // Next's own answers (a route left to it) carry its router's Vary; the start script's do not.
    const viaNext = await fetch(`${base}/v1/openapi.json`);
    expect(viaNext.headers.get("vary")).toContain("rsc");
    expect(plain.headers.get("vary")).not.toContain("rsc");
    // HEAD, which Next derives from GET, is still Next's.
    const head = await fetch(`${base}/v1/lines`, { method: "HEAD", headers: auth });
    expect(head.status).toBe(200);
  });

  it("serves the MCP server to the SDK's own client, on the start script's listener", async () => {
    const transport = new StreamableHTTPClientTransport(new URL(`${base}/api/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } });
    const client = new Client({ name: "e2e-agent", version: "1.0.0" });
    await client.connect(transport);
    try {
      const { tools } = await client.listTools();
      expect(tools).toHaveLength(11);
      const contact = "+15551239999";
      await fetch(`${base}/api/simulator/messages`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "application/json" }, body: JSON.stringify({ line, from: contact, text: "hello agent" }) });
      const sent = (await client.callTool({ name: "send_message", arguments: { from: line, to: contact, text: "hello human" } })) as CallToolResult;
      expect(sent.isError).toBeFalsy();
      expect(sent.structuredContent).toMatchObject({ object: "outbox_item", status: "pending" });
      const refused = (await client.callTool({ name: "send_message", arguments: { from: line, to: "+15550000001", text: "x" } })) as CallToolResult;
      expect(refused).toMatchObject({ isError: true, structuredContent: { error: { code: "contact_has_not_messaged" } } });
    } finally {
      await client.close();
    }
    // Answered by the start script's own listener (server/transports/http/fast-routes.ts), not Next's router.
    const raw = await fetch(`${base}/api/mcp`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
    });
    expect(raw.status).toBe(200);
    expect(raw.headers.get("vary") ?? "").not.toContain("rsc");
  });

  it("loses nothing and sends nothing twice when the server is killed mid-delivery", async () => {
    const auth = { authorization: `Bearer ${key}`, "content-type": "application/json" };
    // Ten concurrent senders; the server is killed while they are still sending, so items are
    // pending or claimed, and some requests are cut off mid-flight.
    const accepted = await sendUntilKilled(100, async (i) => {
      const res = await fetch(`${base}/v1/messages`, {
        method: "POST",
        headers: auth,
        body: JSON.stringify({ from: line, to: "+15550001111", text: `bulk ${i}` }),
      });
      return res.status === 200 ? (await res.json()).id : null;
    });

    await start();
    const deadline = Date.now() + 60_000;
    for (;;) {
      const pending = await (await fetch(`${base}/v1/outbox?status=pending&limit=1`, { headers: auth })).json();
      const claimed = await (await fetch(`${base}/v1/outbox?status=claimed&limit=1`, { headers: auth })).json();
      if (pending.data.length === 0 && claimed.data.length === 0) break;
      expect(Date.now()).toBeLessThan(deadline);
      await new Promise((r) => setTimeout(r, 200));
    }
    const sent: { text: string; outbox_id: string }[] = [];
    let cursor: string | null = null;
    do {
      const page: { data: { text: string; outbox_id: string; is_from_me: boolean }[]; next_cursor: string | null } = await (
        await fetch(`${base}/v1/messages?from=${encodeURIComponent(line)}&limit=100${cursor ? `&cursor=${cursor}` : ""}`, { headers: auth })
      ).json();
      sent.push(...page.data.filter((m) => m.is_from_me && m.text.startsWith("bulk ")));
      cursor = page.next_cursor;
    } while (cursor);
    const outboxIds = sent.map((m) => m.outbox_id);
    expect(new Set(outboxIds).size).toBe(outboxIds.length); // no item sent twice
    for (const id of accepted) expect(outboxIds).toContain(id); // every accepted item sent
    const failed = await (await fetch(`${base}/v1/outbox?status=failed&limit=1`, { headers: auth })).json();
    expect(failed.data).toEqual([]);
  });

  it("loses no webhook delivery when the server is killed mid-delivery; a repeat carries the same delivery ID", async () => {
    const auth = { authorization: `Bearer ${key}`, "content-type": "application/json" };
    let secret = "";
    /** Every delivery that arrived: its ID and the message it reports. */
    const arrived: { deliveryId: string; messageId: string }[] = [];
    // Answers after 30 ms, so deliveries are in flight when the server dies.
    const receiver = http.createServer((req, res) => {
      let rawBody = "";
      req.on("data", (c) => (rawBody += c));
      req.on("end", () => {
        const event = verifyWebhook(rawBody, req.headers as Record<string, string>, secret);
        arrived.push({ deliveryId: event.delivery_id, messageId: String(event.data.id) });
        setTimeout(() => res.writeHead(200).end("ok"), 30);
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(receiver.address() as net.AddressInfo).port}/hook`;
      const created = await (await fetch(`${base}/v1/webhooks`, { method: "POST", headers: auth, body: JSON.stringify({ from: line, url, events: ["message.received"] }) })).json();
      secret = created.secret;
      expect(secret).toMatch(/^whsec_/);

      const accepted = await sendUntilKilled(150, async (i, lane) => {
        const res = await fetch(`${base}/api/simulator/messages`, {
          method: "POST",
          headers: auth,
          body: JSON.stringify({ line, from: `+1555000${String(2000 + lane)}`, text: `event ${i}` }),
        });
        return res.status === 201 ? (await res.json()).id : null;
      });
      await start();

      // On PGlite the restarted server returns the dead one's claims at once (on PostgreSQL,
      // when their 30 s lease runs out).
      const deadline = Date.now() + 60_000;
      for (;;) {
        const open = await Promise.all(
          ["pending", "delivering"].map(async (status) =>
            (await (await fetch(`${base}/v1/webhooks/deliveries?webhook_id=${created.id}&status=${status}&limit=1`, { headers: auth })).json()).data,
          ),
        );
        if (open.every((d) => d.length === 0)) break;
        expect(Date.now()).toBeLessThan(deadline);
        await new Promise((r) => setTimeout(r, 500));
      }
      // Every accepted event arrived, each under exactly one delivery ID (a repeat after the
      // restart reuses it, so a receiver can deduplicate).
      const idsByMessage = new Map<string, Set<string>>();
      for (const a of arrived) idsByMessage.set(a.messageId, (idsByMessage.get(a.messageId) ?? new Set()).add(a.deliveryId));
      for (const id of accepted) expect(idsByMessage.get(id)?.size, `event for ${id}`).toBe(1);
      const failed = await (await fetch(`${base}/v1/webhooks/deliveries?webhook_id=${created.id}&status=failed&limit=1`, { headers: auth })).json();
      expect(failed.data).toEqual([]);
      const repeats = arrived.length - new Set(arrived.map((a) => a.deliveryId)).size;
      console.log(`webhook restart: ${accepted.length} events accepted, ${arrived.length} POSTs received, ${repeats} repeated after the kill`);
    } finally {
      receiver.closeAllConnections();
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
    }
  }, 150_000);

  it("keeps everything across a restart, and revocation through the CLI takes effect", async () => {
    await stop();
    await start();
    const auth = { authorization: `Bearer ${key}` };
    const first = await (await fetch(`${base}/v1/messages?id=${firstMessageId}`, { headers: auth })).json();
    expect(first).toMatchObject({ id: firstMessageId, text: "hello from e2e" });
    // Not the blocking form: while it ran (seconds on a busy machine) the server closed this
    // process's idle keep-alive connection, and the next fetch, reusing it, failed.
    await app.adminAsync("key", "revoke", "--key", key);
    const deadline = Date.now() + 7000;
    let status = 0;
    while (Date.now() < deadline && status !== 401) {
      status = (await fetch(`${base}/v1/lines`, { headers: auth })).status;
      if (status !== 401) await new Promise((r) => setTimeout(r, 250));
    }
    expect(status).toBe(401);
  });
});

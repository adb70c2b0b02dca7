import { describe, expect, it, vi } from "vitest";
import { GET } from "@/app/v1/[[...path]]/route";
import { hashKey } from "@/server/services/access/api-keys";
import { config, resetConfig } from "@/server/kernel/config";
import { deleteStaleListenSessions, SESSION_TTL_MS } from "@/server/services/webhooks/listen";
import { openStreams } from "@/server/services/webhooks/stream-slots";
import { db, get, inbound, makeAccount, makeKey, phone, post, runDelivery, type Fixture } from "./helpers";

// Small caps, so the cap test needs few streams; no other test here opens more than 2 at once per key.
process.env.MAX_STREAMS_PER_KEY = "2";
process.env.MAX_STREAMS_PER_ACCOUNT = "3";
resetConfig();

// GET /v1/listen: the account's webhook events as server-sent events, resumable. The webhook
// sender runs meanwhile and must leave these deliveries to the stream.

runDelivery();

interface SseEvent {
  id?: string;
  event: string;
  data: string;
}

/** Opens the stream and reads its events as they arrive. */
async function open(f: Fixture, query = "") {
  const abort = new AbortController();
  const res = await GET(new Request(`http://localhost/v1/listen${query}`, { headers: { authorization: `Bearer ${f.key}` }, signal: abort.signal }));
  const events: SseEvent[] = [];
  let ended = false;
  if (res.status === 200) {
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    void (async () => {
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
        if (done) break;
        buffer += value;
        let end: number;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const fields = Object.fromEntries(
            block
              .split("\n")
              .filter((l) => !l.startsWith(":") && l.includes(": "))
              .map((l) => [l.slice(0, l.indexOf(": ")), l.slice(l.indexOf(": ") + 2)]),
          );
          if (fields.event) events.push(fields as unknown as SseEvent);
        }
      }
      ended = true;
    })();
  }
  const next = async (name: string, timeoutMs = 10_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const i = events.findIndex((e) => e.event === name);
      if (i >= 0) return events.splice(i, 1)[0]!;
      if (Date.now() > deadline) throw new Error(`no ${name} event within ${timeoutMs} ms; got ${events.map((e) => e.event)}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  return { res, events, next, close: () => abort.abort(), ended: () => ended };
}

async function waitFor(check: () => Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("GET /v1/listen", () => {
  it("streams the account's events as a webhook receives them, and nothing of other accounts", async () => {
    const f = await makeAccount();
    const other = await makeAccount();
    const stream = await open(f);
    expect(stream.res.status).toBe(200);
    expect(stream.res.headers.get("content-type")).toContain("text/event-stream");
    const session = JSON.parse((await stream.next("session")).data);
    expect(session).toMatchObject({ session: expect.stringMatching(/^lsn_/), lines: [f.line.handle] });
    expect(session.events).toContain("message.received");

    const alice = phone();
    const m = await inbound(f, alice, "hello listen");
    await inbound(other, phone(), "not for f");
    const received = await stream.next("message.received");
    const body = JSON.parse(received.data);
    expect(body).toMatchObject({ event: "message.received", delivery_id: received.id, data: { id: m.id, text: "hello listen", line_handle: f.line.handle } });
    expect(received.id).toMatch(/^dlv_/);

    const sent = await post("/v1/messages", f.key, { from: f.line.handle, to: alice, text: "reply" });
    const sentEvent = JSON.parse((await stream.next("message.sent")).data);
    expect(sentEvent.data).toMatchObject({ outbox_id: sent.body.id, text: "reply", is_from_me: true });

    await new Promise((r) => setTimeout(r, 700));
    expect(stream.events.filter((e) => e.data.includes("not for f"))).toEqual([]);
    // The session is not a webhook the owner manages, and the sender never POSTed its deliveries.
    expect((await get("/v1/webhooks", f.key)).body.data).toEqual([]);
    const prisma = await db();
    expect(await prisma.webhookAttempt.count({ where: { delivery: { id: received.id } } })).toBe(0);
    stream.close();
  });

  it("a closed session stops hearing events at once; a resumed one hears them again; stale sessions end", async () => {
    const f = await makeAccount();
    const first = await open(f, `?events=message.received`);
    const { session } = JSON.parse((await first.next("session")).data);
    const prisma = await db();
    const hooks = await prisma.webhook.findMany({ where: { url: `stream:${session}` }, select: { id: true } });
    // Something arrives while connected but is not streamed yet when the client goes.
    first.close();
    await waitFor(async () => (await prisma.webhook.count({ where: { url: `stream:${session}`, isActive: true } })) === 0);
    const alice = phone();
    await inbound(f, alice, "while away");
    // Nothing is written for a session nobody listens to.
    expect(await prisma.webhookDelivery.count({ where: { webhookId: { in: hooks.map((h) => h.id) } } })).toBe(0);

    const again = await open(f, `?session=${session}`);
    expect(JSON.parse((await again.next("session")).data)).toMatchObject({ session, events: ["message.received"] });
    await inbound(f, alice, "back again");
    expect(JSON.parse((await again.next("message.received")).data).data.text).toBe("back again");
    expect(again.events.filter((e) => e.data.includes("while away"))).toEqual([]);
    again.close();
    await new Promise((r) => setTimeout(r, 100));

    expect(await deleteStaleListenSessions(Date.now() + SESSION_TTL_MS + 60_000)).toBeGreaterThan(0);
    const gone = await open(f, `?session=${session}`);
    expect(gone.res.status).toBe(400);
    expect((await gone.res.json()).error).toMatchObject({ code: "invalid_parameter_value", param: "session" });
  });

  it("a client that is back before its old stream ended keeps hearing events", async () => {
    const f = await makeAccount();
    const first = await open(f, `?events=message.received`);
    const { session } = JSON.parse((await first.next("session")).data);
    const again = await open(f, `?session=${session}`); // reconnected while the first stream is still open
    await again.next("session");
    first.close();
    await vi.waitFor(() => expect(first.ended()).toBe(true));
    await new Promise((r) => setTimeout(r, 200)); // the first stream's end is recorded
    await inbound(f, phone(), "still listening");
    expect(JSON.parse((await again.next("message.received")).data).data.text).toBe("still listening");
    again.close();
  });

  it("drops what a closed session had not streamed, so closed sessions leave no pending deliveries", async () => {
    const f = await makeAccount();
    const prisma = await db();
    // Many short sessions, as a client that reconnects in a loop opens (each closed after a moment).
    const sessions: string[] = [];
    for (let i = 0; i < 10; i++) {
      const s = await open(f, `?events=message.received`);
      sessions.push(JSON.parse((await s.next("session")).data).session);
      s.close();
    }
    await waitFor(async () => (await prisma.webhook.count({ where: { accountId: f.accountId, kind: "stream", isActive: true } })) === 0);
    await inbound(f, phone(), "nobody listens");
    expect(await prisma.webhookDelivery.count({ where: { webhook: { accountId: f.accountId, kind: "stream" } } })).toBe(0);
  });

  it("refuses unknown events and keys without webhooks:read", async () => {
    const f = await makeAccount();
    const bad = await open(f, "?events=typing.started");
    expect(bad.res.status).toBe(400);
    expect((await bad.res.json()).error).toMatchObject({ code: "invalid_parameter_value", param: "events" });
    const limited = await makeAccount({ scopes: ["messages:read"] });
    const refused = await open(limited);
    expect(refused.res.status).toBe(403);
    expect((await refused.res.json()).error.code).toBe("insufficient_scope");
  });

  it("ends the stream with an invalid_api_key error event within API_KEY_CACHE_SECONDS of a revocation elsewhere", async () => {
    const f = await makeAccount();
    const stream = await open(f);
    await stream.next("session");
    // Revoked by another instance: this process's key cache learns it within API_KEY_CACHE_SECONDS.
    const prisma = await db();
    await prisma.apiKey.update({ where: { hash: hashKey(f.key) }, data: { revokedAt: new Date() } });
    const revokedAt = Date.now();
    const error = await stream.next("error", 10_000);
    expect(Date.now() - revokedAt).toBeLessThan(config().API_KEY_CACHE_SECONDS * 1000 + 1_500);
    expect(JSON.parse(error.data)).toMatchObject({
      error: { type: "authentication_error", code: "invalid_api_key" },
      request_id: stream.res.headers.get("request-id"),
    });
    await vi.waitFor(() => expect(stream.ended()).toBe(true));
    // What happens next never reaches the revoked key: its session no longer hears events.
    const m = await inbound({ ...f, key: await makeKey(f.accountId) }, phone(), "after revocation");
    await new Promise((r) => setTimeout(r, 600));
    expect(await prisma.webhookDelivery.count({ where: { webhook: { accountId: f.accountId, kind: "stream" }, payload: { path: ["id"], equals: m.id } } })).toBe(0);
    expect(stream.events.filter((e) => e.data.includes("after revocation"))).toEqual([]);
    stream.close();
  });

  it("ends the stream with an error event when the key expires", async () => {
    const f = await makeAccount();
    const key = await makeKey(f.accountId, { expiresAt: new Date(Date.now() + 1_500) });
    const stream = await open({ ...f, key });
    await stream.next("session");
    const error = await stream.next("error", 10_000);
    expect(JSON.parse(error.data).error).toMatchObject({ code: "invalid_api_key", message: expect.stringContaining("expired") });
    await vi.waitFor(() => expect(stream.ended()).toBe(true));
  });

  it("another key cannot resume a session (it answers as unknown), so it cannot take its deliveries", async () => {
    const f = await makeAccount();
    const first = await open(f, "?events=message.received");
    const { session } = JSON.parse((await first.next("session")).data);
    first.close();
    await new Promise((r) => setTimeout(r, 100));

    const noLines = await makeKey(f.accountId, { lineIds: [] });
    const thief = await open({ ...f, key: noLines }, `?session=${session}`);
    expect(thief.res.status).toBe(400);
    expect(await thief.res.json()).toMatchObject({ error: { code: "invalid_parameter_value", param: "session" }, request_id: expect.stringMatching(/^req_/) });
    const sibling = await open({ ...f, key: await makeKey(f.accountId) }, `?session=${session}`);
    expect(sibling.res.status).toBe(400);

    const again = await open(f, `?session=${session}`);
    await again.next("session");
    await inbound(f, phone(), "for the owner of the session");
    expect(JSON.parse((await again.next("message.received")).data).data.text).toBe("for the owner of the session");
    again.close();
  });

  it("caps open streams per key and per account: 429 too_many_streams with Retry-After, a slot frees when a stream ends", async () => {
    const f = await makeAccount();
    const a = [await open(f), await open(f)];
    for (const s of a) expect(s.res.status).toBe(200);
    const third = await open(f);
    expect(third.res.status).toBe(429);
    expect(third.res.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(await third.res.json()).toMatchObject({ error: { type: "rate_limit_error", code: "too_many_streams" }, request_id: expect.stringMatching(/^req_/) });

    const second = { ...f, key: await makeKey(f.accountId) };
    const b = await open(second);
    expect(b.res.status).toBe(200);
    const overAccount = await open(second);
    expect(overAccount.res.status).toBe(429);
    expect((await overAccount.res.json()).error.code).toBe("too_many_streams");

    a[0]!.close();
    await vi.waitFor(() => expect(openStreams(f.accountId)).toBe(2));
    const reopened = await open(f);
    expect(reopened.res.status).toBe(200);
    for (const s of [a[1]!, b, reopened]) s.close();
    await vi.waitFor(() => expect(openStreams(f.accountId)).toBe(0));
  });
});

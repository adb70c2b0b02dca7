import { afterEach, describe, expect, it } from "vitest";
import { sessionActorFor } from "@/server/services/access/session";
import { resetConfig } from "@/server/kernel/config";
import { ingestInbound } from "@/server/services/inbound/bridge-events";
import { createCaller } from "@/server/transports/trpc/router";
import { call, type Fixture, get, gql, makeAccount, makeKey, phone, post } from "./helpers";

// The simulated other phone (/api/simulator/*) is a tool for one account's own lines: it never
// shows another account's messages, never takes another account's paired sandbox phone,
// honours the key's scopes and line restriction, and can be switched off.

const q = encodeURIComponent;
const png = Buffer.from("89504e470d0a1a0a0000000d49484452", "hex").toString("base64");

async function pairSandbox(f: Fixture, from: string): Promise<string> {
  const started = await post("/v1/sandbox", f.key);
  const res = await post("/api/simulator/messages", f.key, { line: started.body.sandbox_line_handle, from, text: started.body.activation_code });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return started.body.sandbox_line_handle;
}

describe("guid dedupe is per line", () => {
  it("another account's guid on its own line makes a new message of its own, without the first account's attachment", async () => {
    const a = await makeAccount();
    const b = await makeAccount();
    const guid = `GUID-${Date.now()}-${Math.random()}`;
    const first = await post("/api/simulator/messages", a.key, {
      line: a.line.handle,
      from: phone(),
      text: "private to A",
      guid,
      attachment: { filename: "secret.png", mime_type: "image/png", content_base64: png },
    });
    expect(first.status).toBe(201);
    expect(first.body.attachments).toHaveLength(1);

    const second = await post("/api/simulator/messages", b.key, { line: b.line.handle, from: phone(), text: "B's own", guid });
    expect(second.status).toBe(201);
    expect(second.body).toMatchObject({ guid, text: "B's own", attachments: [] });
    expect(second.body.id).not.toBe(first.body.id);
    expect(JSON.stringify(second.body)).not.toContain(first.body.attachments[0].id);

    // On the same line the guid is still a no-op repeat.
    const repeat = await post("/api/simulator/messages", a.key, { line: a.line.handle, from: phone(), text: "again", guid });
    expect(repeat.status).toBe(201);
    expect(repeat.body).toMatchObject({ id: first.body.id, text: "private to A" });
    const listed = await get(`/v1/messages?from=${q(a.line.handle)}`, a.key);
    expect(listed.body.data.filter((m: { guid: string }) => m.guid === guid)).toHaveLength(1);
  });

  it("on the shared sandbox line another account's guid is refused, not answered with that account's message", async () => {
    const a = await makeAccount();
    const b = await makeAccount();
    const [phoneA, phoneB] = [phone(), phone()];
    const sandbox = await pairSandbox(a, phoneA);
    await pairSandbox(b, phoneB);
    const guid = `SBX-${Date.now()}-${Math.random()}`;
    const mine = await post("/api/simulator/messages", a.key, {
      line: sandbox,
      from: phoneA,
      text: "A's sandbox secret",
      guid,
      attachment: { filename: "a.png", mime_type: "image/png", content_base64: png },
    });
    expect(mine.status).toBe(201);
    const theirs = await post("/api/simulator/messages", b.key, { line: sandbox, from: phoneB, text: "hello", guid });
    expect(theirs.status).toBe(400);
    expect(theirs.body.error).toMatchObject({ code: "invalid_parameter_value", param: "guid" });
    expect(JSON.stringify(theirs.body)).not.toContain("A's sandbox secret");
    expect(JSON.stringify(theirs.body)).not.toContain(mine.body.id);
  });

  it("the same guid ingested concurrently is stored once and every caller gets that message", async () => {
    const f = await makeAccount();
    const guid = `RACE-${Date.now()}`;
    const from = phone();
    const results = await Promise.all(
      Array.from({ length: 6 }, () => post("/api/simulator/messages", f.key, { line: f.line.handle, from, text: "once", guid })),
    );
    expect(results.map((r) => r.status)).toEqual(Array(6).fill(201));
    expect(new Set(results.map((r) => r.body.id)).size).toBe(1);
  });

  it("a guid used on two lines of one account: replies and reactions find the message in their own chat", async () => {
    const f = await makeAccount();
    const { createLine } = await import("@/server/services/lines/lines");
    const second = await createLine({ accountId: f.accountId, handle: phone(), advancedFeatures: true });
    const guid = `TWO-LINES-${Date.now()}`;
    const contact = phone();
    const onFirst = await post("/api/simulator/messages", f.key, { line: f.line.handle, from: contact, text: "parent on line 1", guid });
    const onSecond = await post("/api/simulator/messages", f.key, { line: second.handle, from: contact, text: "parent on line 2", guid });
    expect(onSecond.body.id).not.toBe(onFirst.body.id);
    const reply = await post("/api/simulator/messages", f.key, { line: f.line.handle, from: contact, text: "reply", reply_to_guid: guid });

    const res = await gql(f.key, `query($id: String!) { message(id: $id) { replyTo { id } } }`, { id: reply.body.id });
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.message.replyTo).toEqual({ id: onFirst.body.id });

    // A reply sent from line 1 naming the GUID is in the same chat, not refused as another chat's.
    const sent = await post("/v1/messages", f.key, { from: f.line.handle, to: contact, text: "answer", reply_to: guid });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    const reacted = await post("/v1/reactions", f.key, { from: second.handle, to: contact, message_id: guid, type: "love" });
    expect(reacted.status, JSON.stringify(reacted.body)).toBe(200);
  });

  it("a platform bridge's guid is scoped to the line too", async () => {
    const a = await makeAccount();
    const b = await makeAccount();
    const guid = `BRIDGE-${Date.now()}`;
    const one = await ingestInbound({ type: "message", lineId: a.line.id, sender: phone(), text: "one", guid });
    const two = await ingestInbound({ type: "message", lineId: b.line.id, sender: phone(), text: "two", guid });
    expect(one && "created" in one && one.created).toBe(true);
    expect(two && "created" in two && two.created).toBe(true);
  });
});

describe("sandbox pairing through the simulator", () => {
  it("cannot take a phone paired with another account: the victim stays paired", async () => {
    const victim = await makeAccount();
    const attacker = await makeAccount();
    const victimPhone = phone();
    const sandbox = await pairSandbox(victim, victimPhone);
    const code = (await post("/v1/sandbox", attacker.key)).body.activation_code;

    const stolen = await post("/api/simulator/messages", attacker.key, { line: sandbox, from: victimPhone, text: code });
    expect(stolen.status).toBe(400);
    expect(stolen.body.error).toMatchObject({ code: "sandbox_contact_mismatch", param: "from" });
    expect(stolen.body.request_id).toMatch(/^req_/);

    expect((await get("/v1/sandbox", victim.key)).body).toMatchObject({ status: "active", contact_identifier: victimPhone });
    expect((await get("/v1/sandbox", attacker.key)).body).toMatchObject({ status: "pending", contact_identifier: null });
    // The victim's phone still reaches the victim.
    expect((await post("/api/simulator/messages", victim.key, { line: sandbox, from: victimPhone, text: "still mine" })).status).toBe(201);
  });

  it("an account may still move its own pairing to a new phone", async () => {
    const f = await makeAccount();
    const [first, second] = [phone(), phone()];
    const sandbox = await pairSandbox(f, first);
    const code = (await get("/v1/sandbox", f.key)).body.activation_code;
    const moved = await post("/api/simulator/messages", f.key, { line: sandbox, from: second, text: code });
    expect(moved.status).toBe(201);
    expect((await get("/v1/sandbox", f.key)).body).toMatchObject({ status: "active", contact_identifier: second });
  });
});

describe("scopes and line restrictions", () => {
  it("injecting needs messages:write and reading needs messages:read", async () => {
    const f = await makeAccount();
    const from = phone();
    const readOnly = await makeKey(f.accountId, { scopes: ["messages:read"] });
    const writeOnly = await makeKey(f.accountId, { scopes: ["messages:write"] });
    const noMessages = await makeKey(f.accountId, { scopes: ["chats:read"] });
    const writes: [string, Record<string, unknown>][] = [
      ["/api/simulator/messages", { line: f.line.handle, from, text: "hi" }],
      ["/api/simulator/typing", { line: f.line.handle, from, is_typing: true }],
      ["/api/simulator/receipts", { line: f.line.handle, from }],
      ["/api/simulator/reactions", { line: f.line.handle, from, message_id: "X", type: "love" }],
    ];
    for (const key of [readOnly, noMessages]) {
      for (const [path, body] of writes) {
        const res = await post(path, key, body);
        expect(res.status, path).toBe(403);
        expect(res.body.error).toMatchObject({ type: "authorization_error", code: "insufficient_scope" });
      }
    }
    const inbox = `/api/simulator/messages?line=${q(f.line.handle)}&contact=${q(from)}`;
    for (const key of [writeOnly, noMessages]) {
      const res = await get(inbox, key);
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe("insufficient_scope");
    }
    expect((await post("/api/simulator/messages", writeOnly, writes[0]![1])).status).toBe(201);
    expect((await get(inbox, readOnly)).status).toBe(200);
  });

  it("a key restricted to other lines gets line_not_accessible", async () => {
    const f = await makeAccount();
    const other = await makeAccount();
    const from = phone();
    const restricted = await makeKey(f.accountId, { lineIds: [other.line.id] });
    const seed = await post("/api/simulator/messages", f.key, { line: f.line.handle, from, text: "hi" });
    const cases: [string, string, Record<string, unknown> | undefined][] = [
      ["POST", "/api/simulator/messages", { line: f.line.handle, from, text: "hi" }],
      ["POST", "/api/simulator/messages", { line: f.line.id, from, text: "hi" }],
      ["POST", "/api/simulator/typing", { line: f.line.handle, from, is_typing: true }],
      ["POST", "/api/simulator/receipts", { line: f.line.handle, from }],
      ["POST", "/api/simulator/reactions", { line: f.line.handle, from, message_id: seed.body.id, type: "love" }],
      ["GET", `/api/simulator/messages?line=${q(f.line.handle)}`, undefined],
    ];
    for (const [method, path, body] of cases) {
      const res = await call(method, path, { key: restricted, body });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.body.error).toMatchObject({ type: "authorization_error", code: "line_not_accessible" });
    }
  });
});

describe("SIMULATOR_ENABLED", () => {
  afterEach(() => {
    delete process.env.SIMULATOR_ENABLED;
    resetConfig();
  });

  it("off: every simulator route answers 404 route_not_found like an unknown route, key or not", async () => {
    const f = await makeAccount();
    process.env.SIMULATOR_ENABLED = "false";
    resetConfig();
    const cases: [string, string, Record<string, unknown> | undefined][] = [
      ["POST", "/api/simulator/messages", { line: f.line.handle, from: phone(), text: "hi" }],
      ["GET", `/api/simulator/messages?line=${q(f.line.handle)}`, undefined],
      ["POST", "/api/simulator/typing", { line: f.line.handle, from: phone(), is_typing: true }],
      ["POST", "/api/simulator/receipts", { line: f.line.handle, from: phone() }],
      ["POST", "/api/simulator/reactions", { line: f.line.handle, from: phone(), message_id: "X", type: "love" }],
    ];
    for (const [method, path, body] of cases) {
      for (const key of [f.key, null]) {
        const res = await call(method, path, { key, body });
        expect(res.status, `${method} ${path}`).toBe(404);
        expect(res.body.error).toMatchObject({ type: "not_found_error", code: "route_not_found" });
        expect(res.headers.get("request-id")).toMatch(/^req_/);
      }
    }
    const listed = await get(`/v1/messages?from=${q(f.line.handle)}`, f.key);
    expect(listed.body.data).toEqual([]);
  });

  it("a phone that has not texted the line has an empty inbox, not chat_not_found (the page's first load)", async () => {
    const f = await makeAccount();
    const dashboard = createCaller({ actor: sessionActorFor(f.accountId), requestId: "req_test" });
    expect(await dashboard.simulator.inbox({ line: f.line.handle, contact: phone(), limit: 20 })).toEqual({ data: [], has_more: false, next_cursor: null });
    const res = await get(`/api/simulator/messages?line=${q(f.line.handle)}&contact=${q(phone())}`, f.key);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([]);
  });

  it("off: the dashboard's procedures say so (status) and refuse with route_not_found", async () => {
    const f = await makeAccount();
    const dashboard = createCaller({ actor: sessionActorFor(f.accountId), requestId: "req_test" });
    expect(await dashboard.simulator.status()).toEqual({ object: "simulator_status", enabled: true });
    process.env.SIMULATOR_ENABLED = "false";
    resetConfig();
    expect(await dashboard.simulator.status()).toEqual({ object: "simulator_status", enabled: false });
    await expect(dashboard.simulator.message({ line: f.line.handle, from: phone(), text: "hi" })).rejects.toMatchObject({
      code: "NOT_FOUND",
      cause: expect.objectContaining({ code: "route_not_found" }),
    });
    await expect(dashboard.simulator.inbox({ line: f.line.handle, limit: 20 })).rejects.toMatchObject({ code: "NOT_FOUND" });
  });

  it("on explicitly: works under any NODE_ENV", async () => {
    const f = await makeAccount();
    const previous = process.env.NODE_ENV;
    Object.assign(process.env, { NODE_ENV: "production", SIMULATOR_ENABLED: "true" });
    resetConfig();
    try {
      expect((await post("/api/simulator/messages", f.key, { line: f.line.handle, from: phone(), text: "hi" })).status).toBe(201);
    } finally {
      Object.assign(process.env, { NODE_ENV: previous });
    }
  });
});

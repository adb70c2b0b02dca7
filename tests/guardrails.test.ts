import { describe, expect, it, vi } from "vitest";
import { sessionActorFor } from "@/server/services/access/session";
import { createAccountApiKey, setApiKeyGuardrails } from "@/server/services/accounts/api-keys";
import { sendMessage } from "@/server/services/messaging/send";
import { call, db, get, inbound, makeAccount, makeKey, phone, post, runDelivery, type Fixture } from "./helpers";

// Guardrails of API keys and human takeover through /v1 (docs/agents.md): each guardrail
// refuses with its code before anything is stored; approval holds a send until the owner
// approves or rejects it, and exactly one of the two wins; a paused chat refuses guarded keys
// and not the owner.

runDelivery();

const q = encodeURIComponent;
const send = (key: string, body: Record<string, unknown>) => post("/v1/messages", key, body);
const item = async (f: Fixture, id: string) => (await get(`/v1/outbox?id=${id}`, f.key)).body;

async function outboxCount(f: Fixture): Promise<number> {
  return (await db()).outboxItem.count({ where: { accountId: f.accountId } });
}

async function chatOf(f: Fixture, identifier: string) {
  return (await db()).chat.findFirstOrThrow({ where: { lineId: f.line.id, identifier } });
}

describe("allow_to", () => {
  it("lets the key write only to listed contacts and chats, and leaves nothing behind when it refuses", async () => {
    const f = await makeAccount();
    const alice = phone();
    const bob = phone();
    const carol = phone();
    await inbound(f, alice);
    await inbound(f, bob);
    await inbound(f, carol);
    const carolChat = await chatOf(f, carol);
    // Entries are normalized like sends: a formatted number matches its E.164 form.
    const formatted = `+1 (${alice.slice(2, 5)}) ${alice.slice(5, 8)}-${alice.slice(8)}`;
    const key = await makeKey(f.accountId, { guardrails: { allow_to: [formatted, carolChat.id] } });
    expect((await send(key, { from: f.line.handle, to: alice, text: "ok" })).status).toBe(200);
    expect((await send(key, { from: f.line.handle, to: carol, text: "by identifier of a listed chat" })).status).toBe(200);
    expect((await send(key, { from: f.line.handle, to: carolChat.id, text: "by chat ID" })).status).toBe(200);
    const before = await outboxCount(f);
    const res = await send(key, { from: f.line.handle, to: bob, text: "no" });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ error: { code: "recipient_not_allowed", param: "to" }, request_id: expect.stringMatching(/^req_/) });
    const bobChat = await chatOf(f, bob);
    expect((await post("/v1/reactions", key, { from: f.line.handle, to: bobChat.id, message_id: "msg_x", type: "love" })).body.error.code).toBe("recipient_not_allowed");
    expect((await post("/v1/typing", key, { from: f.line.handle, to: bob })).body.error.code).toBe("recipient_not_allowed");
    expect(await outboxCount(f)).toBe(before);
  });

  it("refuses a new contact before a chat is opened for it (a line that may message people first)", async () => {
    const f = await makeAccount();
    const { setLinePolicy } = await import("@/server/services/lines/set-line-policy");
    await setLinePolicy(null, f.line.id, { contact_first: false });
    const stranger = phone();
    const key = await makeKey(f.accountId, { guardrails: { allow_to: [phone()] } });
    expect((await send(key, { from: f.line.handle, to: stranger, text: "hello?" })).body.error.code).toBe("recipient_not_allowed");
    expect(await (await db()).chat.count({ where: { lineId: f.line.id, identifier: stranger } })).toBe(0);
  });
});

describe("max_sends_per_chat_without_reply and max_sends_per_day", () => {
  it("counts sends to a chat since the contact last wrote, and starts again when they write", async () => {
    const f = await makeAccount();
    const alice = phone();
    await inbound(f, alice);
    const key = await makeKey(f.accountId, { guardrails: { max_sends_per_chat_without_reply: 2 } });
    expect((await send(key, { from: f.line.handle, to: alice, text: "1" })).status).toBe(200);
    // Sends by the owner (another key) are not this key's.
    expect((await send(f.key, { from: f.line.handle, to: alice, text: "owner" })).status).toBe(200);
    const canceled = await send(key, { from: f.line.handle, to: alice, text: "2", send_at: Date.now() + 3_600_000 });
    await call("DELETE", `/v1/outbox?id=${canceled.body.id}`, { key });
    expect((await send(key, { from: f.line.handle, to: alice, text: "2" })).status).toBe(200);
    const refused = await send(key, { from: f.line.handle, to: alice, text: "3" });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({ code: "reply_required", param: "to" });
    await inbound(f, alice, "reply");
    expect((await send(key, { from: f.line.handle, to: alice, text: "3" })).status).toBe(200);
  });

  it("caps a key's sends in any 24 hours with 429 and Retry-After, concurrent sends included", async () => {
    const f = await makeAccount();
    const contacts = [phone(), phone(), phone(), phone(), phone(), phone()];
    for (const c of contacts) await inbound(f, c);
    const key = await makeKey(f.accountId, { guardrails: { max_sends_per_day: 4 } });
    const results = await Promise.all(contacts.map((c) => send(key, { from: f.line.handle, to: c, text: "hi" })));
    expect(results.filter((r) => r.status === 200)).toHaveLength(4);
    const over = results.filter((r) => r.status === 429);
    expect(over).toHaveLength(2);
    for (const r of over) {
      expect(r.body.error.code).toBe("key_send_limit_exceeded");
      const retry = Number(r.headers.get("retry-after"));
      expect(retry).toBeGreaterThan(86_000);
      expect(retry).toBeLessThanOrEqual(86_400);
    }
    // Reactions count; typing does not.
    const m = await inbound(f, contacts[0]!);
    expect((await post("/v1/reactions", key, { from: f.line.handle, to: contacts[0], message_id: m.id, type: "love" })).body.error.code).toBe("key_send_limit_exceeded");
    expect((await post("/v1/typing", key, { from: f.line.handle, to: contacts[0] })).status).toBe(200);
    // The window slides: sends older than a day no longer count.
    await (await db()).outboxItem.updateMany({ where: { apiKeyId: { not: null }, accountId: f.accountId }, data: { createdAt: new Date(Date.now() - 86_400_000 - 1000) } });
    expect((await send(key, { from: f.line.handle, to: contacts[1], text: "a new day" })).status).toBe(200);
  });
});

describe("require_approval", () => {
  async function setup() {
    const f = await makeAccount();
    const alice = phone();
    await inbound(f, alice);
    const agent = await makeKey(f.accountId, { guardrails: { require_approval: true } });
    return { f, alice, agent };
  }

  it("holds every send until the owner approves it; an approved send goes", async () => {
    const { f, alice, agent } = await setup();
    const held = await send(agent, { from: f.line.handle, to: alice, text: "may I?" });
    expect(held.body).toMatchObject({ object: "outbox_item", status: "pending" });
    await new Promise((r) => setTimeout(r, 300));
    expect(await item(f, held.body.id)).toMatchObject({ status: "pending", hold_reason: "approval", not_before: null });
    const list = await get(`/v1/outbox?hold_reason=approval`, f.key);
    expect(list.body.data.map((i: { id: string }) => i.id)).toEqual([held.body.id]);
    // The agent cannot approve itself, nor reschedule its way out of the hold.
    expect((await post(`/v1/outbox/approve?id=${held.body.id}`, agent)).body.error.code).toBe("insufficient_scope");
    const moved = await call("PATCH", `/v1/outbox?id=${held.body.id}`, { key: agent, body: { send_at: Date.now() + 60_000 } });
    expect(moved.body).toMatchObject({ hold_reason: "approval", not_before: null });
    const approved = await post(`/v1/outbox/approve?id=${held.body.id}`, f.key);
    expect(approved.status).toBe(200);
    // It asked for a time a minute ahead: approved, it waits for that time.
    expect(approved.body).toMatchObject({ status: "pending", hold_reason: "scheduled" });
    await call("PATCH", `/v1/outbox?id=${held.body.id}`, { key: f.key, body: { send_at: Date.now() + 1_000 } });
    await vi.waitFor(async () => expect((await item(f, held.body.id)).status).toBe("sent"), { timeout: 15_000 });
    expect((await post(`/v1/outbox/approve?id=${held.body.id}`, f.key)).body.error.code).toBe("outbox_item_not_reviewable");
  });

  it("a rejected send fails with error rejected, and message.failed tells the webhooks", async () => {
    const { f, alice, agent } = await setup();
    await post("/v1/webhooks", f.key, { from: f.line.handle, url: "https://example.com/failed", events: ["message.failed", "outbox.approval_requested"] });
    await post("/v1/webhooks", f.key, { from: f.line.handle, url: "https://example.com/all" }); // every event but the opt-in ones
    const held = await send(agent, { from: f.line.handle, to: alice, text: "no?" });
    const rejected = await post(`/v1/outbox/reject?id=${held.body.id}`, f.key);
    expect(rejected.body).toMatchObject({ status: "failed", error: "rejected", hold_reason: null });
    const deliveries = await (await db()).webhookDelivery.findMany({ where: { webhook: { lineId: f.line.id } }, include: { webhook: true } });
    const events = deliveries.map((d) => `${d.webhook.url} ${d.event}`).sort();
    expect(events).toEqual(["https://example.com/failed message.failed", "https://example.com/failed outbox.approval_requested"]);
    const request = deliveries.find((d) => d.event === "outbox.approval_requested")!;
    expect(request.payload).toMatchObject({ object: "outbox_item", id: held.body.id, hold_reason: "approval", api_key_id: expect.stringMatching(/^key_/) });
    expect(deliveries.find((d) => d.event === "message.failed")!.payload).toMatchObject({ outbox_id: held.body.id, error: "rejected" });
  });

  it("an approval racing a rejection: exactly one wins", async () => {
    const { f, alice, agent } = await setup();
    for (let round = 0; round < 5; round++) {
      const held = await send(agent, { from: f.line.handle, to: alice, text: `race ${round}` });
      const [a, r] = await Promise.all([post(`/v1/outbox/approve?id=${held.body.id}`, f.key), post(`/v1/outbox/reject?id=${held.body.id}`, f.key)]);
      expect([a.status, r.status].sort()).toEqual([200, 409]);
      const loser = a.status === 409 ? a : r;
      expect(loser.body.error.code).toBe("outbox_item_not_reviewable");
      const row = await (await db()).outboxItem.findUniqueOrThrow({ where: { id: held.body.id } });
      if (a.status === 200) expect(row.error).not.toBe("rejected");
      else expect(row).toMatchObject({ status: "failed", error: "rejected" });
    }
  });

  it("cannot hold outbox:approve, at creation or by a later change", async () => {
    const f = await makeAccount();
    const owner = sessionActorFor(f.accountId);
    await expect(createAccountApiKey(owner, { name: "bad", scopes: ["messages:write", "outbox:approve"], guardrails: { require_approval: true } })).rejects.toMatchObject({
      code: "invalid_parameter_value",
      param: "scopes",
    });
    const supervisor = await createAccountApiKey(owner, { name: "supervisor", scopes: ["outbox:approve", "messages:write"] });
    await expect(setApiKeyGuardrails(owner, { id: supervisor.id, guardrails: { allow_to: ["+15550001111"] } })).rejects.toMatchObject({ code: "invalid_parameter_value" });
    const agent = await createAccountApiKey(owner, { name: "agent", scopes: ["messages:write"], guardrails: { max_sends_per_day: 5 } });
    const changed = await setApiKeyGuardrails(owner, { id: agent.id, guardrails: { require_approval: true, max_sends_per_day: null } });
    expect(changed.guardrails).toEqual({ allow_to: null, require_approval: true, max_sends_per_chat_without_reply: null, max_sends_per_day: null });
  });
});

describe("a key with guardrails reaches only its own sends", () => {
  /** An MCP tool's result, through the real /api/mcp route (stateless JSON-RPC). */
  async function mcpTool(key: string, name: string, args: Record<string, unknown>) {
    const res = await call("POST", "/api/mcp", { key, body: { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } }, headers: { accept: "application/json, text/event-stream" } });
    expect(res.status).toBe(200);
    return res.body.result as { isError?: boolean; structuredContent?: { id?: string; error?: { code: string } } };
  }

  it("lists, reads, cancels and reschedules only them (404 outbox_item_not_found for the rest, on REST and MCP); a key without guardrails keeps today's rights", async () => {
    const f = await makeAccount();
    const alice = phone();
    await inbound(f, alice);
    const agent = await makeKey(f.accountId, { guardrails: { max_sends_per_day: 100 } });
    const other = await makeKey(f.accountId, { guardrails: { allow_to: [alice] } });
    const plain = await makeKey(f.accountId);
    const later = (key: string, text: string) => send(key, { from: f.line.handle, to: alice, text, send_at: Date.now() + 3_600_000 }).then((r) => r.body.id as string);
    const owners = await later(f.key, "the owner's");
    const others = await later(other, "another agent's");
    const own = await later(agent, "the agent's");
    const ids = async (key: string, query: string) => (await get(`/v1/outbox?${query}`, key)).body.data.map((i: { id: string }) => i.id);
    for (const query of ["", `from=${q(f.line.handle)}`, "status=pending", "hold_reason=scheduled"]) {
      expect(await ids(agent, query), query).toEqual([own]);
      expect(await ids(plain, query), query).toEqual([own, others, owners]);
    }
    const step = Date.now() + 60_000; // earlier than the owner's send_at: a reschedule would make it go early
    for (const id of [owners, others]) {
      for (const res of [
        await get(`/v1/outbox?id=${id}`, agent),
        await call("DELETE", `/v1/outbox?id=${id}`, { key: agent }),
        await call("PATCH", `/v1/outbox?id=${id}`, { key: agent, body: { send_at: step } }),
      ]) {
        expect(res.status).toBe(404);
        expect(res.body).toMatchObject({ error: { code: "outbox_item_not_found", param: "id" }, request_id: expect.stringMatching(/^req_/) });
      }
      for (const tool of ["get_outbox_item", "cancel_send"]) {
        expect(await mcpTool(agent, tool, { id }), tool).toMatchObject({ isError: true, structuredContent: { error: { code: "outbox_item_not_found" } } });
      }
    }
    const untouched = await (await db()).outboxItem.findMany({ where: { id: { in: [owners, others] } } });
    expect(untouched.map((i) => [i.status, i.sendAt!.getTime() > step])).toEqual([["held", true], ["held", true]]);
    // Its own sends: all of it.
    expect(await mcpTool(agent, "get_outbox_item", { id: own })).toMatchObject({ structuredContent: { id: own } });
    expect((await call("PATCH", `/v1/outbox?id=${own}`, { key: agent, body: { send_at: step } })).body).toMatchObject({ id: own, not_before: step });
    expect((await call("DELETE", `/v1/outbox?id=${own}`, { key: agent })).body).toMatchObject({ id: own, status: "failed", error: "canceled" });
    // A key without guardrails reaches every send of its lines, as before.
    expect((await call("PATCH", `/v1/outbox?id=${others}`, { key: plain, body: { send_at: step } })).status).toBe(200);
    expect((await call("DELETE", `/v1/outbox?id=${owners}`, { key: plain })).body).toMatchObject({ status: "failed", error: "canceled" });
  });
});

describe("human takeover", () => {
  it("a paused chat refuses keys with guardrails; the owner's key and dashboard still send; resume lets the agent back", async () => {
    const f = await makeAccount();
    const alice = phone();
    await inbound(f, alice);
    const chat = await chatOf(f, alice);
    const agent = await makeKey(f.accountId, { guardrails: { max_sends_per_day: 100 } });
    expect((await send(agent, { from: f.line.handle, to: alice, text: "before" })).status).toBe(200);
    const paused = await post(`/v1/chats/pause?id=${chat.id}`, f.key);
    expect(paused.body).toMatchObject({ object: "chat", id: chat.id, paused_at: expect.any(Number), paused_by: expect.stringMatching(/^key_/) });
    // Pausing again keeps who paused it first and since when.
    const again = await post(`/v1/chats/pause?id=${chat.id}`, f.key);
    expect(again.body.paused_at).toBe(paused.body.paused_at);
    const before = await outboxCount(f);
    const refused = await send(agent, { from: f.line.handle, to: alice, text: "during" });
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe("chat_paused");
    expect(await outboxCount(f)).toBe(before);
    // The agent cannot lift the pause it is under.
    expect((await post(`/v1/chats/resume?id=${chat.id}`, agent)).body.error.code).toBe("insufficient_scope");
    expect((await send(f.key, { from: f.line.handle, to: alice, text: "the owner" })).status).toBe(200);
    const dashboard = await sendMessage(sessionActorFor(f.accountId), { from: f.line.handle, to: alice, text: "from the dashboard" }, "req_test");
    expect(dashboard.status).toBe("pending");
    const listed = await get(`/v1/chats?from=${q(f.line.handle)}`, f.key);
    expect(listed.body.data.find((c: { id: string }) => c.id === chat.id)).toMatchObject({ paused_at: paused.body.paused_at });
    const resumed = await post(`/v1/chats/resume?id=${chat.id}`, f.key);
    expect(resumed.body).toMatchObject({ paused_at: null, paused_by: null });
    expect((await send(agent, { from: f.line.handle, to: alice, text: "after" })).status).toBe(200);
  });

  it("pausing takes effect at once, even for a chat the send path has cached", async () => {
    const f = await makeAccount();
    const alice = phone();
    await inbound(f, alice);
    const agent = await makeKey(f.accountId, { guardrails: { allow_to: [alice] } });
    for (let i = 0; i < 3; i++) expect((await send(agent, { from: f.line.handle, to: alice, text: `${i}` })).status).toBe(200);
    await post(`/v1/chats/pause?id=${(await chatOf(f, alice)).id}`, f.key);
    expect((await send(agent, { from: f.line.handle, to: alice, text: "now" })).body.error.code).toBe("chat_paused");
  });
});

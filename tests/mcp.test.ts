import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import { afterEach, describe, expect, it, vi } from "vitest";
import { revokeApiKeyBySecret } from "@/server/services/access/api-keys";
import type { GuardrailsInput } from "@/server/policy/key-guardrails";
import { setLinePolicy } from "@/server/services/lines/set-line-policy";
import { errorOf, ToolData } from "./mcp-results";
import { dispatch, get, inbound, makeAccount, makeKey, phone, post, runDelivery, type Fixture } from "./helpers";

// The MCP server driven by the SDK's own Client over Streamable HTTP (in process, through the
// real route module): the tools, what they answer, and each refusal as a tool error carrying
// the /v1 error code.

runDelivery();

const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

async function connect(key: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL("http://localhost:3000/api/mcp"), {
    requestInit: { headers: { authorization: `Bearer ${key}` } },
    fetch: (url, init) => dispatch(new Request(url, init)),
  });
  const client = new Client({ name: "test-agent", version: "1.0.0" });
  await client.connect(transport);
  clients.push(client);
  // From then on the client checks every structuredContent against its tool's outputSchema.
  await client.listTools();
  return client;
}

async function callTool(client: Client, name: string, args: Record<string, unknown>): Promise<{ isError: boolean; data: ToolData; text: string }> {
  const result = (await client.callTool({ name, arguments: args }, undefined, { timeout: 130_000 })) as CallToolResult;
  const [sentence, json] = result.content.map((c) => (c.type === "text" ? c.text : ""));
  // A model given only the text reads the whole result: the structured content's JSON follows the sentence.
  expect(JSON.parse(json!), `${name}: ${sentence}`).toEqual(result.structuredContent);
  return { isError: result.isError === true, data: ToolData.parse(result.structuredContent), text: sentence! };
}

async function refused(client: Client, name: string, args: Record<string, unknown>) {
  const r = await callTool(client, name, args);
  expect(r.isError, `${name} ${JSON.stringify(args)} should be refused: ${r.text}`).toBe(true);
  expect(r.data.request_id).toMatch(/^req_/);
  expect(r.text).toContain(errorOf(r.data).code);
  return errorOf(r.data);
}

async function agentOn(f: Fixture, guardrails: GuardrailsInput) {
  return connect(await makeKey(f.accountId, { guardrails }));
}

describe("the MCP server over Streamable HTTP", () => {
  it("lists the eleven tools, each with a JSON Schema and a description", async () => {
    const f = await makeAccount();
    const client = await connect(f.key);
    expect(client.getServerVersion()?.name).toBe("relay-messaging");
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(
      ["cancel_send", "get_capacity", "get_outbox_item", "list_chats", "list_lines", "mark_read", "react", "read_messages", "send_message", "set_typing", "wait_for_reply"].sort(),
    );
    for (const t of tools) {
      expect(t.inputSchema.type, t.name).toBe("object");
      expect(t.description!.length, t.name).toBeGreaterThan(40);
    }
    // Each declares its result: the /v1 answer's schema, or the /v1 error envelope, with request_id.
    const validator = new AjvJsonSchemaValidator();
    for (const t of tools) {
      expect(t.outputSchema, t.name).toMatchObject({ type: "object", required: ["request_id"], anyOf: expect.arrayContaining([{ $ref: "#/$defs/Error" }]) });
      expect(validator.getValidator(t.outputSchema!)({ data: [{ id: 1 }], request_id: "req_x" }).valid, t.name).toBe(false);
    }
    const lines = tools.find((t) => t.name === "list_lines")!;
    expect(lines.outputSchema!.anyOf).toContainEqual({ $ref: "#/$defs/LinePage" });
    const page = (await dispatch(new Request("http://localhost:3000/v1/lines", { headers: { authorization: `Bearer ${f.key}` } }))).json();
    expect(validator.getValidator(lines.outputSchema!)(await page).valid).toBe(true);
    const send = tools.find((t) => t.name === "send_message")!;
    expect(send.inputSchema.required).toEqual(expect.arrayContaining(["from", "to"]));
    expect(Object.keys(send.inputSchema.properties ?? {})).toEqual(expect.arrayContaining(["text", "attachments", "reply_to", "send_at", "idempotency_key"]));
  });

  it("lists lines and chats, sends, follows the send, reads it back, reacts, marks read, types and cancels", async () => {
    const f = await makeAccount();
    const alice = phone();
    const first = await inbound(f, alice, "hello agent");
    const client = await connect(f.key);

    const lines = await callTool(client, "list_lines", {});
    expect(lines.isError).toBe(false);
    expect(lines.data.data!.map((l) => l.id)).toContain(f.line.id);
    const chats = await callTool(client, "list_chats", { from: f.line.handle });
    expect(chats.data.data![0]).toMatchObject({ object: "chat", identifier: alice, paused_at: null });

    const sent = await callTool(client, "send_message", { from: f.line.handle, to: alice, text: "hi from the agent", reply_to: first.id });
    expect(sent.isError).toBe(false);
    expect(sent.data).toMatchObject({ object: "outbox_item", status: "pending", request_id: expect.stringMatching(/^req_/) });
    expect(sent.text).toContain(sent.data.id);
    await vi.waitFor(async () => expect((await callTool(client, "get_outbox_item", { id: sent.data.id })).data.status).toBe("sent"), { timeout: 15_000 });

    const read = await callTool(client, "read_messages", { from: f.line.handle, to: alice, limit: 5 });
    expect(read.data.data!.map((m) => m.text)).toEqual(["hi from the agent", "hello agent"]);
    expect(read.data.data![0]).toMatchObject({ is_from_me: true, reply_to_guid: first.guid });

    for (const [name, args] of [
      ["react", { from: f.line.handle, to: alice, message_id: first.id, type: "love" }],
      ["mark_read", { from: f.line.handle, to: alice }],
      ["set_typing", { from: f.line.handle, to: alice, state: "on" }],
    ] as const) {
      const r = await callTool(client, name, args);
      expect(r.isError, `${name}: ${r.text}`).toBe(false);
      expect(r.data.object).toBe("outbox_item");
    }

    const later = await callTool(client, "send_message", { from: f.line.handle, to: alice, text: "later", send_at: Date.now() + 3_600_000 });
    expect((await callTool(client, "get_outbox_item", { id: later.data.id })).data).toMatchObject({ status: "pending", hold_reason: "scheduled" });
    const canceled = await callTool(client, "cancel_send", { id: later.data.id });
    expect(canceled.data).toMatchObject({ status: "failed", error: "canceled" });
    expect((await refused(client, "cancel_send", { id: later.data.id })).code).toBe("outbox_item_not_cancelable");

    const capacity = await callTool(client, "get_capacity", { from: f.line.handle });
    expect(capacity.data).toMatchObject({ object: "capacity", lines: [{ line_id: f.line.id }] });
  });

  it("sends once for an idempotency key, however often the agent retries", async () => {
    const f = await makeAccount();
    const alice = phone();
    await inbound(f, alice, "hi");
    const client = await connect(f.key);
    const args = { from: f.line.handle, to: alice, text: "exactly once", idempotency_key: "reply-1" };
    const [a, b] = await Promise.all([callTool(client, "send_message", args), callTool(client, "send_message", args)]);
    const c = await callTool(client, "send_message", args);
    const ok = [a, b, c].filter((r) => !r.isError);
    expect(new Set(ok.map((r) => r.data.id)).size).toBe(1);
    for (const r of [a, b, c].filter((x) => x.isError)) expect(errorOf(r.data).code).toBe("idempotency_key_in_use");
    expect((await refused(client, "send_message", { ...args, text: "different" })).code).toBe("idempotency_key_reused");
    // A refusal is kept too: the retry answers the same refusal, as a tool error.
    const stranger = { from: f.line.handle, to: phone(), text: "hello?", idempotency_key: "reply-2" };
    expect((await refused(client, "send_message", stranger)).code).toBe("contact_has_not_messaged");
    expect((await refused(client, "send_message", stranger)).code).toBe("contact_has_not_messaged");
  });

  it("waits for the contact's reply, which the simulator delivers, and times out without one", async () => {
    const f = await makeAccount();
    const alice = phone();
    await inbound(f, alice, "first");
    const client = await connect(f.key);
    const waiting = callTool(client, "wait_for_reply", { from: f.line.handle, to: alice, timeout_seconds: 20 });
    await new Promise((r) => setTimeout(r, 300));
    await inbound(f, alice, "the answer");
    const r = await waiting;
    expect(r.isError).toBe(false);
    expect(r.data).toMatchObject({ object: "wait_result", status: "replied", message: { text: "the answer", is_from_me: false } });
    expect(r.text).toContain("the answer");

    // A reply that came before the call is found with `since`.
    const before = Date.now();
    await inbound(f, alice, "already here");
    const early = await callTool(client, "wait_for_reply", { from: f.line.handle, to: alice, timeout_seconds: 5, since: before - 1 });
    expect(early.data).toMatchObject({ status: "replied", message: { text: "already here" } });

    const started = Date.now();
    const none = await callTool(client, "wait_for_reply", { from: f.line.handle, to: alice, timeout_seconds: 1 });
    expect(none.data).toMatchObject({ status: "timeout", waited_seconds: 1 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });

  it("answers a plain tools/call on its hot path exactly as the SDK's Server answers the same call", async () => {
    const f = await makeAccount();
    const alice = phone();
    await inbound(f, alice, "hi");
    const headers = { authorization: `Bearer ${f.key}`, "content-type": "application/json", accept: "application/json, text/event-stream" };
    const post = async (body: unknown) => {
      const res = await dispatch(new Request("http://localhost:3000/api/mcp", { method: "POST", headers, body: JSON.stringify(body) }));
      const text = (await res.text()).replace(/req_[0-9a-z]{26}/g, "req_…");
      return { status: res.status, type: res.headers.get("content-type"), text };
    };
    const calls: [string, Record<string, unknown>][] = [
      ["list_lines", {}],
      ["list_chats", { from: f.line.handle }],
      ["read_messages", { from: f.line.handle, to: alice, limit: 1 }],
      ["send_message", { to: alice }],
      ["get_outbox_item", { id: "obx_nope" }],
      ["no_such_tool", {}],
    ];
    for (const [i, [name, args]] of calls.entries()) {
      const message = { jsonrpc: "2.0", id: i + 1, method: "tools/call", params: { name, arguments: args } };
      // A batch of one is never the hot path's: the SDK's Server answers it, in an array.
      const [direct, sdk] = [await post(message), await post([message])];
      expect(direct, name).toEqual({ ...sdk, text: sdk.text.slice(1, -1) });
      expect(sdk.text, name).toMatch(/^\[.*\]$/s);
      expect(JSON.parse(direct.text)).toMatchObject({ jsonrpc: "2.0", id: i + 1, result: { content: [{ type: "text" }, { type: "text" }] } });
    }
  });

  it("answers bad calls with tool errors carrying the /v1 codes, never a protocol error", async () => {
    const f = await makeAccount();
    const alice = phone();
    await inbound(f, alice, "hi");
    const client = await connect(f.key);
    expect((await refused(client, "no_such_tool", {})).code).toBe("invalid_parameter_value");
    expect(await refused(client, "send_message", { to: alice, text: "x" })).toMatchObject({ code: "missing_required_parameter", param: "from" });
    expect(await refused(client, "send_message", { from: f.line.handle, to: alice, text: 42 })).toMatchObject({ code: "invalid_parameter_value", param: "text" });
    expect(await refused(client, "send_message", { from: f.line.handle, to: alice, text: "x".repeat(100_000) })).toMatchObject({ code: "invalid_parameter_value", param: "text" });
    expect(await refused(client, "wait_for_reply", { from: f.line.handle, to: alice, timeout_seconds: 121 })).toMatchObject({ code: "invalid_parameter_value", param: "timeout_seconds" });
    expect((await refused(client, "send_message", { from: f.line.handle, to: phone(), text: "x" })).code).toBe("contact_has_not_messaged");
    expect((await refused(client, "get_outbox_item", { id: "obx_nope" })).code).toBe("outbox_item_not_found");
    expect((await refused(client, "read_messages", { from: "+15550000000", to: alice })).code).toBe("line_not_found");
    // The server still answers after all of that.
    expect((await callTool(client, "list_lines", {})).isError).toBe(false);
  });

  it("applies the key's scopes, lines and rate limit as /v1 does", async () => {
    const f = await makeAccount();
    const other = await makeAccount();
    const alice = phone();
    await inbound(f, alice, "hi");
    const readOnly = await connect(await makeKey(f.accountId, { scopes: ["lines:read", "chats:read", "messages:read"] }));
    expect((await refused(readOnly, "send_message", { from: f.line.handle, to: alice, text: "x" })).code).toBe("insufficient_scope");
    expect((await callTool(readOnly, "list_chats", { from: f.line.handle })).isError).toBe(false);
    const elsewhere = await connect(await makeKey(f.accountId, { lineIds: [other.line.id] }));
    expect((await refused(elsewhere, "send_message", { from: f.line.handle, to: alice, text: "x" })).code).toBe("line_not_accessible");
    const limited = await connect(await makeKey(f.accountId, { rateLimitPerHour: 2 }));
    await callTool(limited, "list_lines", {});
    await callTool(limited, "list_lines", {});
    const err = await callTool(limited, "list_lines", {});
    expect(err.isError).toBe(true);
    expect(err.data).toMatchObject({ error: { code: "rate_limit_exceeded" }, retry_after: expect.any(Number) });
  });

  it("refuses a missing, malformed or revoked key at the HTTP layer, and ends a wait when the key is revoked", async () => {
    const f = await makeAccount();
    const alice = phone();
    await inbound(f, alice, "hi");
    const res = await dispatch(new Request("http://localhost:3000/api/mcp", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" }));
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ error: { code: "missing_api_key" }, request_id: expect.stringMatching(/^req_/) });
    const get405 = await dispatch(new Request("http://localhost:3000/api/mcp", { headers: { authorization: `Bearer ${f.key}` } }));
    expect(get405.status).toBe(405);

    const key = await makeKey(f.accountId);
    const client = await connect(key);
    const waiting = callTool(client, "wait_for_reply", { from: f.line.handle, to: alice, timeout_seconds: 60 });
    await new Promise((r) => setTimeout(r, 200));
    const started = Date.now();
    await revokeApiKeyBySecret(key);
    const ended = await waiting;
    expect(ended.isError).toBe(true);
    expect(errorOf(ended.data).code).toBe("invalid_api_key");
    expect(Date.now() - started).toBeLessThan(10_000);
    await expect(client.listTools()).rejects.toThrow();
  });
});

describe("guardrails through MCP", () => {
  it("refuses each guardrail with its code, and holds an approval send until the owner decides", async () => {
    const f = await makeAccount();
    const alice = phone();
    const bob = phone();
    await inbound(f, alice, "hi");
    await inbound(f, bob, "hi");
    const from = f.line.handle;

    const fenced = await agentOn(f, { allow_to: [alice] });
    expect((await callTool(fenced, "send_message", { from, to: alice, text: "ok" })).isError).toBe(false);
    expect((await refused(fenced, "send_message", { from, to: bob, text: "no" })).code).toBe("recipient_not_allowed");

    const patient = await agentOn(f, { max_sends_per_chat_without_reply: 1 });
    expect((await callTool(patient, "send_message", { from, to: alice, text: "one" })).isError).toBe(false);
    expect((await refused(patient, "send_message", { from, to: alice, text: "two" })).code).toBe("reply_required");
    await inbound(f, alice, "answer");
    expect((await callTool(patient, "send_message", { from, to: alice, text: "two" })).isError).toBe(false);

    const capped = await agentOn(f, { max_sends_per_day: 1 });
    expect((await callTool(capped, "send_message", { from, to: bob, text: "one" })).isError).toBe(false);
    const over = await callTool(capped, "send_message", { from, to: bob, text: "two" });
    expect(over.data).toMatchObject({ error: { code: "key_send_limit_exceeded" }, retry_after: expect.any(Number) });
    expect(over.data.retry_after).toBeGreaterThan(86_000);

    const careful = await agentOn(f, { require_approval: true });
    const held = await callTool(careful, "send_message", { from, to: bob, text: "may I?" });
    expect((await callTool(careful, "get_outbox_item", { id: held.data.id })).data).toMatchObject({ status: "pending", hold_reason: "approval", not_before: null });
    await post(`/v1/outbox/approve?id=${held.data.id}`, f.key);
    await vi.waitFor(async () => expect((await get(`/v1/outbox?id=${held.data.id}`, f.key)).body.status).toBe("sent"), { timeout: 15_000 });

    const chat = (await get(`/v1/chats?from=${encodeURIComponent(from)}`, f.key)).body.data.find((c: { identifier: string }) => c.identifier === bob);
    await post(`/v1/chats/pause?id=${chat.id}`, f.key);
    expect((await refused(careful, "send_message", { from, to: bob, text: "still there?" })).code).toBe("chat_paused");
  });
});

describe("what a model reads", () => {
  const at = (ms: number) => new Date(ms).toISOString();
  const outbox = async (client: Client, id: string) => callTool(client, "get_outbox_item", { id });

  it("says in plain words that a send waits, for what and until when, and that it has not been sent", async () => {
    const f = await makeAccount();
    const alice = phone();
    await inbound(f, alice, "hi");
    const from = f.line.handle;

    const careful = await agentOn(f, { require_approval: true });
    const held = await callTool(careful, "send_message", { from, to: alice, text: "may I?" });
    expect(held.text).toBe(`Accepted as ${held.data.id}: held for the owner's approval; it has not been sent. Follow it with get_outbox_item.`);
    expect((await outbox(careful, held.data.id!)).text).toBe(`${held.data.id} is held for the owner's approval; it has not been sent.`);
    await post(`/v1/outbox/reject?id=${held.data.id}`, f.key);
    expect((await outbox(careful, held.data.id!)).text).toBe(`${held.data.id} was rejected by the owner; it was not sent.`);

    const client = await connect(f.key);
    const sendAt = Date.now() + 3_600_000;
    const later = await callTool(client, "send_message", { from, to: alice, text: "later", send_at: sendAt });
    expect(later.text).toBe(`Accepted as ${later.data.id}: scheduled for ${at(sendAt)}; it has not been sent. Follow it with get_outbox_item.`);
    expect((await outbox(client, later.data.id!)).text).toBe(`${later.data.id} is scheduled for ${at(sendAt)}; it has not been sent.`);
    expect((await callTool(client, "cancel_send", { id: later.data.id })).text).toBe(`${later.data.id} was canceled; it was not sent.`);

    const now = await callTool(client, "send_message", { from, to: alice, text: "now" });
    expect(now.text).toBe(`Accepted as ${now.data.id}, pending. Follow it with get_outbox_item.`);
    await vi.waitFor(async () => expect((await outbox(client, now.data.id!)).text).toMatch(new RegExp(`^${now.data.id} was sent at \\d{4}-\\d\\d-\\d\\dT`)), { timeout: 15_000 });
  });

  it("tells a send held by the line's quiet hours or its new-contact budget, with the time it may go", async () => {
    const hhmm = (ms: number) => at(ms).slice(11, 16);
    const quiet = await makeAccount();
    await setLinePolicy(null, quiet.line.id, { contact_first: false, quiet_hours: { start: hhmm(Date.now() - 3_600_000), end: hhmm(Date.now() + 3_600_000), timezone: "UTC" } });
    const budget = await makeAccount();
    await setLinePolicy(null, budget.line.id, { contact_first: false, new_contacts_per_hour: 1, new_contacts_per_day: 50 });
    for (const [f, reason, words] of [
      [quiet, "quiet_hours", "held by the line's quiet hours until"],
      [budget, "new_contact_budget", "held by the line's new-contact budget until"],
    ] as const) {
      const client = await connect(f.key);
      const ids: string[] = [];
      for (const text of ["one", "two"]) ids.push((await callTool(client, "send_message", { from: f.line.handle, to: phone(), text })).data.id!);
      const id = ids.at(-1)!;
      await vi.waitFor(async () => expect((await outbox(client, id)).data).toMatchObject({ status: "pending", hold_reason: reason }), { timeout: 15_000 });
      const item = await outbox(client, id);
      const notBefore = (item.data as { not_before: number }).not_before;
      expect(item.text).toBe(`${id} is ${words} ${at(notBefore)}; it has not been sent.`);
    }
  });
});

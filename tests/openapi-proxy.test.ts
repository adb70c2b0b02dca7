import http from "node:http";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SCOPES } from "@/server/services/access/scopes";
import { openApiDocument } from "@/server/transports/openapi/openapi";
import type { Operation } from "@/server/services/operation";
import { OPERATIONS } from "@/server/services/operations";
import { dispatch, inbound, makeAccount, makeKey, phone, post, call } from "./helpers";
import { type PrismMock, startPrismProxy } from "./prism";

// Our own OpenAPI document against what the server really answers: the real route handlers on a
// loopback port, behind Prism's validating proxy (`prism proxy --errors`). Every answer that
// breaks the document (a field it forbids or lacks, an undocumented 2xx, an error code not listed
// for its status, a header of the wrong shape) comes back as Prism's problem+json, and every
// violation, warnings too (an undocumented error status), is named in `sl-violations`. Requests
// the document allows go through a proxy that validates them too; requests it forbids (to see the
// server's own 400s) through a second one that forwards them unchecked. Two answers never reach
// the server through Prism, which answers them itself: a request without Authorization (its own
// 401) and a body that is not JSON (it parses JSON bodies first); tests/openapi.test.ts checks
// that their codes are listed.

let server: http.Server;
let dir: string;
let strict: PrismMock;
let lenient: PrismMock;

/** The route handlers as a network server (the same `dispatch` the in-process tests use). */
function serve(): Promise<string> {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const headers = new Headers();
      for (const [name, value] of Object.entries(req.headers)) if (typeof value === "string") headers.set(name, value);
      const body = chunks.length && req.method !== "GET" && req.method !== "HEAD" ? Buffer.concat(chunks) : undefined;
      const response = await dispatch(new Request(`http://localhost:3000${req.url}`, { method: req.method, headers, body }));
      res.writeHead(response.status, Object.fromEntries(response.headers));
      res.end(Buffer.from(await response.arrayBuffer()));
    });
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${(server.address() as { port: number }).port}`)));
}

beforeAll(async () => {
  const upstream = await serve();
  dir = mkdtempSync(path.join(tmpdir(), "relay-openapi-"));
  const file = path.join(dir, "openapi.json");
  writeFileSync(file, JSON.stringify(openApiDocument()));
  [strict, lenient] = await Promise.all([startPrismProxy(file, upstream), startPrismProxy(file, upstream, { validateRequest: false })]);
}, 120_000);

afterAll(async () => {
  await Promise.all([strict?.stop(), lenient?.stop()]);
  server?.closeAllConnections();
  await new Promise<void>((resolve) => server?.close(() => resolve()));
  if (dir) rmSync(dir, { recursive: true, force: true });
});

interface Case {
  /** What is sent, for the failure message. */
  name: string;
  method: "GET" | "POST" | "PATCH" | "DELETE";
  path: string;
  key?: string | null;
  json?: unknown;
  raw?: string;
  headers?: Record<string, string>;
  /** The status the server answers (and the error code, for an error). */
  status: number;
  code?: string;
  /** The document itself forbids this request: forward it without validating it. */
  invalid?: boolean;
}

/** A case of one operation: its query string, if any. */
type Sample = Omit<Case, "method" | "path"> & { query?: string };

async function send(c: Case): Promise<string | null> {
  const headers: Record<string, string> = { ...c.headers };
  if (c.key) headers.authorization = `Bearer ${c.key}`;
  let body: string | undefined = c.raw;
  if (c.json !== undefined) {
    body = JSON.stringify(c.json);
    headers["content-type"] ??= "application/json";
  }
  const proxy = c.invalid ? lenient : strict;
  const res = await fetch(`${proxy.url}${c.path}`, { method: c.method, headers, body, redirect: "manual", signal: AbortSignal.timeout(20_000) }).catch((e: Error) => e);
  if (res instanceof Error) return `${c.name}: no answer (${res.message})`;
  const text = await res.text();
  const violations = res.headers.get("sl-violations");
  const problems: string[] = [];
  if (violations) problems.push(`violations ${violations}`);
  if (res.status !== c.status) problems.push(`status ${res.status}, expected ${c.status}: ${text.slice(0, 600)}`);
  else if (c.code) {
    const code = (JSON.parse(text) as { error?: { code?: string } }).error?.code;
    if (code !== c.code) problems.push(`code ${code}, expected ${c.code}`);
  }
  return problems.length ? `${c.name}: ${problems.join("; ")}` : null;
}

describe("the OpenAPI document behind a validating proxy", () => {
  it("describes every answer of every /v1 operation: successes and each error class", async () => {
    const f = await makeAccount();
    const other = await makeAccount();
    const basic = await makeAccount({ advanced: false });
    const ownerless = await makeAccount({ noOwner: true });
    const alice = phone();
    const m = await inbound(f, alice, "contract");
    await inbound(basic, alice, "basic");
    await inbound(other, alice, "elsewhere");
    const restricted = await makeKey(f.accountId, { lineIds: [other.line.id] });
    const noScopes = await makeKey(f.accountId, { scopes: SCOPES.filter((s) => s === "lines:read") });
    const limited = await makeKey(f.accountId, { rateLimitPerHour: 1 });
    await call("GET", "/v1/lines", { key: limited });
    const hook = await post("/v1/webhooks", f.key, { from: f.line.handle, url: "https://example.com/hook", events: ["message.received"] });
    const hook2 = await post("/v1/webhooks", f.key, { from: f.line.handle, url: "https://example.com/hook2", events: ["message.received"] });
    await call("POST", "/v1/files", { key: f.key, raw: "hello", headers: { "content-type": "text/plain" } });
    const q = (o: Record<string, string>) => `?${new URLSearchParams(o)}`;
    const from = f.line.handle;
    const send1 = { from, to: alice, text: "contract" };
    const reused = `reuse-${Date.now()}`;
    await post("/v1/sandbox", f.key);
    await call("POST", "/v1/messages", { key: f.key, body: send1, headers: { "idempotency-key": reused } });
    const inAnHour = () => Date.now() + 3_600_000;
    const toCancel = await post("/v1/messages", f.key, { ...send1, send_at: inAnHour() });
    const toMove = await post("/v1/messages", f.key, { ...send1, send_at: inAnHour() });
    const canceled = await post("/v1/messages", f.key, { ...send1, send_at: inAnHour() });
    await call("DELETE", `/v1/outbox?id=${canceled.body.id}`, { key: f.key });
    // Guardrails (docs/agents.md): an agent whose sends wait for approval, one that may write to nobody but alice.
    const agent = await makeKey(f.accountId, { guardrails: { require_approval: true, max_sends_per_day: 3, max_sends_per_chat_without_reply: 2 } });
    const fenced = await makeKey(f.accountId, { guardrails: { allow_to: [alice] } });
    const toApprove = await post("/v1/messages", agent, send1);
    const toReject = await post("/v1/messages", agent, send1);
    const bob = phone();
    await inbound(f, bob, "bob");
    const pausedChat = (await inbound(f, phone(), "carol")).chat_id as string;
    await post(`/v1/chats/pause?id=${pausedChat}`, f.key);
    const other3 = await inbound(f, phone(), "dave");

    // Each operation's own samples; every declared operation also gets the two common ones below.
    const byOp: Partial<Record<keyof typeof OPERATIONS, Sample[]>> = {
      listLines: [
        { name: "list", key: f.key, status: 200 },
        { name: "unknown key", key: "sk_live_nope", status: 401, code: "invalid_api_key" },
        { name: "rate limited", key: limited, status: 429, code: "rate_limit_exceeded" },
        { name: "bad limit", key: f.key, query: "?limit=0", status: 400, code: "invalid_parameter_value", invalid: true },
      ],
      listChats: [
        { name: "list", key: f.key, query: q({ from }), status: 200 },
        { name: "no from", key: f.key, status: 400, code: "missing_required_parameter", invalid: true },
        { name: "unknown line", key: f.key, query: q({ from: "+15550000000" }), status: 404, code: "line_not_found" },
        { name: "restricted key", key: restricted, query: q({ from }), status: 403, code: "line_not_accessible" },
        { name: "scope", key: noScopes, query: q({ from }), status: 403, code: "insufficient_scope" },
      ],
      listMessages: [
        { name: "page", key: f.key, query: q({ from, to: alice }), status: 200 },
        { name: "one", key: f.key, query: q({ id: m.id }), status: 200 },
        { name: "unknown message", key: f.key, query: q({ id: "msg_nope" }), status: 404, code: "message_not_found" },
        { name: "unknown chat", key: f.key, query: q({ from, to: "+15550000001" }), status: 404, code: "chat_not_found" },
      ],
      sendMessage: [
        { name: "send", key: f.key, json: send1, status: 200 },
        { name: "replay", key: f.key, json: send1, headers: { "idempotency-key": reused }, status: 200 },
        { name: "key reused", key: f.key, json: { ...send1, text: "other" }, headers: { "idempotency-key": reused }, status: 400, code: "idempotency_key_reused" },
        { name: "bad Idempotency-Key", key: f.key, json: send1, headers: { "idempotency-key": "caf\u00e9 key" }, status: 400, code: "invalid_parameter_value", invalid: true },
        { name: "no to", key: f.key, json: { from, text: "x" }, status: 400, code: "missing_required_parameter", invalid: true },
        { name: "never messaged", key: f.key, json: { from, to: "+15550000002", text: "x" }, status: 403, code: "contact_has_not_messaged" },
        { name: "unknown file", key: f.key, json: { from, to: alice, attachments: ["file_nope"] }, status: 404, code: "file_not_found" },
        { name: "JSON as text/plain", key: f.key, json: send1, headers: { "content-type": "text/plain" }, status: 415, code: "unsupported_media_type", invalid: true },
        { name: "body over 1 MiB", key: f.key, json: { from, to: alice, text: "x".repeat(1_100_000) }, status: 413, code: "request_too_large", invalid: true },
        { name: "restricted key", key: restricted, json: send1, status: 403, code: "line_not_accessible" },
        { name: "not on allow_to", key: fenced, json: { from, to: bob, text: "x" }, status: 403, code: "recipient_not_allowed" },
        { name: "paused chat", key: agent, json: { from, to: pausedChat, text: "x" }, status: 409, code: "chat_paused" },
        { name: "no reply yet", key: agent, json: send1, status: 403, code: "reply_required" },
        { name: "daily cap", key: agent, json: { from, to: other3.chat_id, text: "x" }, status: 200 },
        { name: "over the daily cap", key: agent, json: { from, to: bob, text: "x" }, status: 429, code: "key_send_limit_exceeded" },
      ],
      sendAudioMessage: [
        { name: "unknown file", key: f.key, json: { from, to: alice, audio_message: "file_nope" }, status: 404, code: "file_not_found" },
        { name: "no audio", key: f.key, json: { from, to: alice }, status: 400, code: "missing_required_parameter", invalid: true },
      ],
      listReactions: [
        { name: "list", key: f.key, query: q({ message_id: m.id }), status: 200 },
        { name: "no message_id", key: f.key, status: 400, code: "missing_required_parameter", invalid: true },
        { name: "unknown message", key: f.key, query: q({ message_id: "msg_nope" }), status: 404, code: "message_not_found" },
      ],
      sendReaction: [
        { name: "react", key: f.key, json: { from, to: alice, message_id: m.id, type: "love" }, status: 200 },
        { name: "not advanced", key: basic.key, json: { from: basic.line.handle, to: alice, message_id: m.id, type: "love" }, status: 400, code: "advanced_features_required" },
        { name: "unknown message", key: f.key, json: { from, to: alice, message_id: "msg_nope", type: "love" }, status: 404, code: "message_not_found" },
      ],
      listTyping: [
        { name: "list", key: f.key, query: q({ from, to: alice }), status: 200 },
        { name: "unknown chat", key: f.key, query: q({ from, to: "+15550000003" }), status: 404, code: "chat_not_found" },
      ],
      sendTyping: [
        { name: "typing", key: f.key, json: { from, to: alice, state: "on" }, status: 200 },
        { name: "bad state", key: f.key, json: { from, to: alice, state: "sideways" }, status: 400, code: "invalid_parameter_value", invalid: true },
      ],
      listReceipts: [{ name: "list", key: f.key, query: q({ from, to: alice }), status: 200 }],
      sendReceipt: [
        { name: "read", key: f.key, json: { from, to: alice }, status: 200 },
        { name: "unknown line", key: f.key, json: { from: "+15550000000", to: alice }, status: 404, code: "line_not_found" },
      ],
      getOutbox: [
        { name: "list", key: f.key, status: 200 },
        { name: "unknown item", key: f.key, query: q({ id: "obx_nope" }), status: 404, code: "outbox_item_not_found" },
      ],
      cancelOutboxItem: [
        { name: "cancel", key: f.key, query: q({ id: toCancel.body.id }), status: 200 },
        { name: "not pending", key: f.key, query: q({ id: canceled.body.id }), status: 409, code: "outbox_item_not_cancelable" },
        { name: "unknown item", key: f.key, query: q({ id: "obx_nope" }), status: 404, code: "outbox_item_not_found" },
      ],
      rescheduleOutboxItem: [
        { name: "reschedule", key: f.key, query: q({ id: toMove.body.id }), json: { send_at: inAnHour() + 60_000 }, status: 200 },
        { name: "in the past", key: f.key, query: q({ id: toMove.body.id }), json: { send_at: Date.now() - 60_000 }, status: 400, code: "invalid_parameter_value" },
        { name: "not pending", key: f.key, query: q({ id: canceled.body.id }), json: { send_at: inAnHour() }, status: 409, code: "outbox_item_not_reschedulable" },
      ],
      approveOutboxItem: [
        { name: "approve", key: f.key, query: q({ id: toApprove.body.id }), status: 200 },
        { name: "no longer waits", key: f.key, query: q({ id: toApprove.body.id }), status: 409, code: "outbox_item_not_reviewable" },
        { name: "unknown item", key: f.key, query: q({ id: "obx_nope" }), status: 404, code: "outbox_item_not_found" },
        { name: "the agent itself", key: agent, query: q({ id: toReject.body.id }), status: 403, code: "insufficient_scope", invalid: true },
      ],
      rejectOutboxItem: [
        { name: "reject", key: f.key, query: q({ id: toReject.body.id }), status: 200 },
        { name: "no longer waits", key: f.key, query: q({ id: toReject.body.id }), status: 409, code: "outbox_item_not_reviewable" },
      ],
      pauseChat: [
        { name: "pause", key: f.key, query: q({ id: other3.chat_id }), status: 200 },
        { name: "unknown chat", key: f.key, query: q({ id: "cht_nope" }), status: 404, code: "chat_not_found" },
        { name: "no id", key: f.key, status: 400, code: "missing_required_parameter", invalid: true },
      ],
      resumeChat: [
        { name: "resume", key: f.key, query: q({ id: pausedChat }), status: 200 },
        { name: "restricted key", key: restricted, query: q({ id: pausedChat }), status: 403, code: "line_not_accessible" },
      ],
      getCapacity: [
        { name: "a line", key: f.key, query: q({ from }), status: 200 },
        { name: "unknown pool", key: f.key, query: q({ from: "pool_nope" }), status: 404, code: "pool_not_found" },
      ],
      listPools: [{ name: "list", key: f.key, status: 200 }],
      getSandbox: [
        { name: "state", key: f.key, status: 200 },
        { name: "no owner", key: ownerless.key, status: 403, code: "sandbox_requires_owner" },
      ],
      activateSandbox: [
        { name: "activate", key: f.key, status: 200 },
        { name: "bad Idempotency-Key", key: f.key, headers: { "idempotency-key": "two words" }, status: 400, code: "invalid_parameter_value", invalid: true },
        { name: "key reused", key: f.key, headers: { "idempotency-key": reused }, status: 400, code: "idempotency_key_reused" },
      ],
      uploadFile: [
        { name: "upload", key: f.key, raw: "bytes", headers: { "content-type": "text/plain" }, status: 201 },
        { name: "empty", key: f.key, raw: "", headers: { "content-type": "text/plain" }, status: 400, code: "empty_file", invalid: true },
        { name: "key reused", key: f.key, raw: "bytes", headers: { "content-type": "text/plain", "idempotency-key": reused }, status: 400, code: "idempotency_key_reused" },
      ],
      downloadFile: [
        { name: "unknown file", key: f.key, query: q({ id: "file_nope" }), status: 404, code: "file_not_found" },
        { name: "no id", key: f.key, status: 400, code: "missing_required_parameter", invalid: true },
      ],
      listWebhooks: [
        { name: "list", key: f.key, status: 200 },
        { name: "unknown line", key: f.key, query: q({ from: "+15550000000" }), status: 404, code: "line_not_found" },
      ],
      createWebhook: [
        { name: "create", key: f.key, json: { from, url: "https://example.com/h3", events: ["message.sent"] }, status: 200 },
        { name: "bad url", key: f.key, json: { from, url: "ftp://example.com", events: ["message.sent"] }, status: 400, code: "invalid_parameter_value", invalid: true },
      ],
      deleteWebhook: [
        { name: "delete", key: f.key, json: { id: hook2.body.id }, status: 200 },
        { name: "unknown", key: f.key, json: { id: "wh_nope" }, status: 404, code: "webhook_not_found" },
        { name: "another line's", key: restricted, json: { id: hook.body.id }, status: 403, code: "line_not_accessible" },
        { name: "no id", key: f.key, json: {}, status: 400, code: "missing_required_parameter", invalid: true },
      ],
      listDeliveries: [
        { name: "page", key: f.key, query: q({ webhook_id: hook.body.id }), status: 200 },
        { name: "neither", key: f.key, status: 400, code: "missing_required_parameter" },
        { name: "unknown delivery", key: f.key, query: q({ id: "dlv_nope" }), status: 404, code: "delivery_not_found" },
        { name: "another line's webhook", key: restricted, query: q({ webhook_id: hook.body.id }), status: 403, code: "line_not_accessible" },
      ],
      resendDeliveries: [
        { name: "resend", key: f.key, json: { webhook_id: hook.body.id, since: 0 }, status: 200 },
        { name: "unknown delivery", key: f.key, json: { id: "dlv_nope" }, status: 404, code: "delivery_not_found" },
        { name: "neither", key: f.key, json: {}, status: 400, code: "missing_required_parameter", invalid: true },
      ],
      rotateWebhookSecret: [
        { name: "rotate", key: f.key, json: { id: hook.body.id }, status: 200 },
        { name: "another line's", key: restricted, json: { id: hook.body.id }, status: 403, code: "line_not_accessible" },
        { name: "unknown", key: f.key, json: { id: "wh_nope" }, status: 404, code: "webhook_not_found" },
        { name: "no id", key: f.key, json: {}, status: 400, code: "missing_required_parameter", invalid: true },
      ],
      enableWebhook: [
        { name: "enable", key: f.key, json: { id: hook.body.id }, status: 200 },
        { name: "no id", key: f.key, json: {}, status: 400, code: "missing_required_parameter", invalid: true },
      ],
      disableWebhook: [
        { name: "disable", key: f.key, json: { id: hook.body.id }, status: 200 },
        { name: "unknown", key: f.key, json: { id: "wh_nope" }, status: 404, code: "webhook_not_found" },
      ],
      // Its success is an endless event stream, which a proxy that reads whole answers cannot relay.
      listen: [
        { name: "unknown line", key: f.key, query: q({ from: "+15550000000" }), status: 404, code: "line_not_found" },
        { name: "scope", key: noScopes, status: 403, code: "insufficient_scope" },
      ],
    };

    const failures: string[] = [];
    for (const [id, op] of Object.entries(OPERATIONS) as [keyof typeof OPERATIONS, Operation][]) {
      const cases = byOp[id] ?? [];
      // Every operation: a key that does not exist, and one without the operation's scope.
      const common: Sample[] = [
        { name: "unknown key (every operation)", key: "sk_live_doesnotexist", status: 401, code: "invalid_api_key", invalid: true },
        ...(op.scope && op.scope !== "lines:read" ? [{ name: "without its scope (every operation)", key: noScopes, status: 403, code: "insufficient_scope", invalid: true }] : []),
      ];
      for (const { query, ...c } of [...cases, ...common]) {
        const problem = await send({ ...c, name: `${op.method} ${op.path} (${c.name})`, method: op.method, path: `${op.path}${query ?? ""}` });
        if (problem) failures.push(problem);
      }
    }
    expect(failures).toEqual([]);
  }, 180_000);

  it("documents what Idempotency-Key accepts: a key the server refuses breaks the document's pattern", async () => {
    const f = await makeAccount();
    const refused = await fetch(`${strict.url}/v1/sandbox`, { method: "POST", headers: { authorization: `Bearer ${f.key}`, "idempotency-key": "two words" } });
    expect(refused.status).toBe(422);
    // Prism's own answer: the request broke the document, naming the header.
    expect(await refused.text()).toMatch(/idempotency-key/i);
    const accepted = await fetch(`${strict.url}/v1/sandbox`, { method: "POST", headers: { authorization: `Bearer ${f.key}`, "idempotency-key": crypto.randomUUID() } });
    expect(accepted.status).toBe(200);
    expect(accepted.headers.get("sl-violations")).toBeNull();
    expect(await accepted.json()).toMatchObject({ object: "sandbox", request_id: expect.stringMatching(/^req_/) });
  });
});

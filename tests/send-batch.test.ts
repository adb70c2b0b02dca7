import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startRunner, stopRunner } from "@/server/engine/outbox-runner";
import { call, get, inbound, makeAccount, makeKey, phone, post, type Fixture } from "./helpers";

const q = encodeURIComponent;
const later = () => Date.now() + 86_400_000;

beforeAll(() => startRunner());
afterAll(() => stopRunner());

/** What POST /v1/messages answers for `body`, without its request_id, for comparison with a batch's item. */
async function single(f: Fixture, body: unknown) {
  const { request_id: _, ...rest } = (await post("/v1/messages", f.key, body)).body;
  return rest;
}

describe("POST /v1/messages/batch", () => {
  it("answers each message in order: its outbox item, or the error the single form answers for it", async () => {
    const f = await makeAccount();
    const [alice, bob, stranger] = [phone(), phone(), phone()];
    await inbound(f, alice, "hi");
    await inbound(f, bob, "hi");
    const bad = [
      { from: f.line.handle, to: alice },
      { from: f.line.handle, to: stranger, text: "first contact" },
      { from: f.line.handle, to: alice, text: "x".repeat(20_001) },
      { from: "+15559990000", to: alice, text: "no such line" },
      { from: f.line.handle, to: alice, text: "bad time", send_at: "tomorrow" },
      { from: f.line.handle, to: alice, text: "nul \u0000" },
    ];
    const res = await post("/v1/messages/batch", f.key, {
      messages: [{ from: f.line.handle, to: alice, text: "now" }, ...bad, { from: f.line.handle, to: bob, text: "later", send_at: later() }, "not an object"],
    });
    expect(res.status).toBe(200);
    expect(res.body.object).toBe("list");
    expect(res.body.request_id).toMatch(/^req_/);
    const data = res.body.data as Record<string, unknown>[];
    expect(data).toHaveLength(9);
    const accepted = { object: "outbox_item", id: expect.stringMatching(/^obx_/), status: "pending" };
    expect(data[0]).toEqual(accepted);
    expect(data[7]).toEqual(accepted);
    for (const [i, body] of bad.entries()) {
      const expected = await single(f, body);
      expect(expected.error.code).toBeTruthy();
      expect(data[i + 1]).toEqual({ ...expected, request_id: res.body.request_id });
    }
    expect(data[8]).toEqual({ error: expect.objectContaining({ type: "invalid_request_error", code: "invalid_json" }), request_id: res.body.request_id });

    // The one sent now is sent; the scheduled one is held until its time.
    await vi.waitFor(async () => expect((await get(`/v1/outbox?id=${data[0]!.id}`, f.key)).body.status).toBe("sent"), { timeout: 15_000, interval: 20 });
    const held = await get(`/v1/outbox?id=${data[7]!.id}`, f.key);
    expect(held.body).toMatchObject({ status: "pending", hold_reason: "scheduled" });
    const sent = await get(`/v1/messages?from=${q(f.line.handle)}&to=${q(alice)}`, f.key);
    expect(sent.body.data.filter((m: { is_from_me: boolean }) => m.is_from_me).map((m: { text: string }) => m.text)).toEqual(["now"]);
  });

  it("refuses a batch that is not a list of 1 to 1,000 messages as a whole", async () => {
    const f = await makeAccount();
    const message = { from: f.line.handle, to: phone(), text: "hi" };
    const cases: [unknown, string, string][] = [
      [{}, "missing_required_parameter", "messages"],
      [{ messages: [] }, "invalid_parameter_value", "messages"],
      [{ messages: message }, "invalid_parameter_value", "messages"],
      [{ messages: Array.from({ length: 1_001 }, () => message) }, "invalid_parameter_value", "messages"],
    ];
    for (const [body, code, param] of cases) {
      const res = await post("/v1/messages/batch", f.key, body);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code, param });
      expect(res.body.request_id).toMatch(/^req_/);
    }
    const notJson = await call("POST", "/v1/messages/batch", { key: f.key, raw: "{", headers: { "content-type": "application/json" } });
    expect(notJson.body.error.code).toBe("invalid_json");
    const outbox = await get(`/v1/outbox?from=${q(f.line.handle)}`, f.key);
    expect(outbox.body.data).toEqual([]);
  });

  it("needs messages:write, and a key's guardrails count each message", async () => {
    const f = await makeAccount();
    const contacts = [phone(), phone(), phone()];
    for (const c of contacts) await inbound(f, c, "hi");
    const reader = await makeKey(f.accountId, { scopes: ["messages:read"] });
    const refused = await post("/v1/messages/batch", reader, { messages: [{ from: f.line.handle, to: contacts[0], text: "hi" }] });
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe("insufficient_scope");

    const agent = await makeKey(f.accountId, { guardrails: { max_sends_per_day: 2 } });
    const res = await post("/v1/messages/batch", agent, { messages: contacts.map((to) => ({ from: f.line.handle, to, text: "hello" })) });
    expect(res.status).toBe(200);
    const codes = (res.body.data as { status?: string; error?: { code: string } }[]).map((d) => d.error?.code ?? d.status);
    expect(codes.filter((c) => c === "pending")).toHaveLength(2);
    expect(codes.filter((c) => c === "key_send_limit_exceeded")).toHaveLength(1);
  });

  it("one Idempotency-Key covers the request: a retry answers the same items and stores none again", async () => {
    const f = await makeAccount();
    const alice = phone();
    await inbound(f, alice, "hi");
    const body = { messages: [1, 2, 3].map((n) => ({ from: f.line.handle, to: alice, text: `n${n}`, send_at: later() })) };
    const headers = { "idempotency-key": `batch-${Date.now()}` };
    const first = await call("POST", "/v1/messages/batch", { key: f.key, body, headers });
    const again = await call("POST", "/v1/messages/batch", { key: f.key, body, headers });
    expect(again.status).toBe(200);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body.data).toEqual(first.body.data);
    const outbox = await get(`/v1/outbox?from=${q(f.line.handle)}&hold_reason=scheduled&limit=100`, f.key);
    expect(outbox.body.data.map((i: { id: string }) => i.id).sort()).toEqual(first.body.data.map((i: { id: string }) => i.id).sort());
    const other = await call("POST", "/v1/messages/batch", { key: f.key, body: { messages: body.messages.slice(1) }, headers });
    expect(other.body.error.code).toBe("idempotency_key_reused");
  });

  it("takes 1,000 scheduled sends in one request, all held", async () => {
    const f = await makeAccount();
    const contacts = Array.from({ length: 10 }, () => phone());
    for (const c of contacts) await inbound(f, c, "hi");
    const at = later();
    const messages = Array.from({ length: 1_000 }, (_, i) => ({ from: f.line.handle, to: contacts[i % 10], text: `reminder ${i}`, send_at: at }));
    const res = await post("/v1/messages/batch", f.key, { messages });
    expect(res.status).toBe(200);
    expect(res.body.data.filter((d: { status?: string }) => d.status === "pending")).toHaveLength(1_000);
    expect(new Set(res.body.data.map((d: { id: string }) => d.id)).size).toBe(1_000);
    let seen = 0;
    let cursor: string | undefined;
    do {
      const page = await get(`/v1/outbox?from=${q(f.line.handle)}&hold_reason=scheduled&limit=100${cursor ? `&cursor=${q(cursor)}` : ""}`, f.key);
      seen += page.body.data.length;
      cursor = page.body.next_cursor ?? undefined;
    } while (cursor);
    expect(seen).toBe(1_000);
  }, 60_000);
});

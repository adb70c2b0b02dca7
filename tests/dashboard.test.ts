import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { sessionActorFor } from "@/server/services/access/session";
import { startRunner, stopRunner } from "@/server/engine/outbox-runner";
import { verifyCredentials } from "@/server/services/accounts/accounts";
import { handleTrpc } from "@/server/transports/trpc/handle-trpc";
import { appRouter, createCaller } from "@/server/transports/trpc/router";
import { get, inbound, makeAccount, phone, post, type Fixture } from "./helpers";

// The dashboard's tRPC API: the same services as /v1 under a signed-in session, errors with
// the REST codes, and nothing of one account visible to another.

beforeAll(() => startRunner());
afterAll(() => stopRunner());

const as = (f: Pick<Fixture, "accountId">) => createCaller({ actor: sessionActorFor(f.accountId), requestId: "req_test" });

/** A tRPC call over HTTP (the route's handler), signed in as `f` or signed out. */
async function http(procedure: string, input: unknown, f: Pick<Fixture, "accountId"> | null, method: "GET" | "POST" = "POST") {
  const url = new URL(`http://localhost/api/trpc/${procedure}`);
  if (method === "GET") url.searchParams.set("input", JSON.stringify(input));
  const req = new Request(url, method === "POST" ? { method, body: JSON.stringify(input), headers: { "content-type": "application/json" } } : {});
  const res = await handleTrpc(req, async () => (f ? sessionActorFor(f.accountId) : null));
  return { status: res.status, body: await res.json() };
}

describe("accounts and sessions", () => {
  it("signs up an owner whose email and password sign in; wrong ones do not; a taken email is refused", async () => {
    const email = `new-${Date.now()}@example.com`;
    const res = await http("account.signUp", { email, password: "correct horse battery" }, null);
    expect(res.status).toBe(200);
    expect(res.body.result.data).toMatchObject({ email });
    const found = await verifyCredentials(email.toUpperCase(), "correct horse battery");
    expect(found).toMatchObject({ email, accountId: res.body.result.data.id });
    expect(await verifyCredentials(email, "wrong password")).toBeNull();
    expect(await verifyCredentials("nobody@example.com", "correct horse battery")).toBeNull();

    const again = await http("account.signUp", { email, password: "another password" }, null);
    expect(again.status).toBe(400);
    expect(again.body.error.data).toMatchObject({ code: "invalid_parameter_value", param: "email" });
    const short = await http("account.signUp", { email: "x@example.com", password: "short" }, null);
    expect(short.body.error.data).toMatchObject({ code: "invalid_parameter_value", param: "password" });
  });

  it("answers 401 session_required to every signed-out procedure call", async () => {
    const res = await http("keys.list", undefined, null, "GET");
    expect(res.status).toBe(401);
    expect(res.body.error.data).toMatchObject({ code: "session_required" });
    expect(res.body.error.data.requestId).toMatch(/^req_/);
  });
});

describe("API keys", () => {
  it("creates a key shown once that works on /v1, lists it without the secret, replaces and revokes it", async () => {
    const f = await makeAccount();
    const created = await as(f).keys.create({ name: "ci", scopes: ["lines:read"], line_ids: [f.line.id] });
    expect(created.secret).toMatch(/^sk_live_/);
    expect(created).toMatchObject({ name: "ci", scopes: ["lines:read"], line_ids: [f.line.id], status: "active" });
    expect((await get("/v1/lines", created.secret)).status).toBe(200);
    expect((await get("/v1/chats?from=" + encodeURIComponent(f.line.handle), created.secret)).body.error.code).toBe("insufficient_scope");
    const listed = await as(f).keys.list();
    expect(JSON.stringify(listed)).not.toContain(created.secret);
    expect(listed.find((k) => k.id === created.id)).toMatchObject({ prefix: created.prefix });

    const replaced = await as(f).keys.replace({ id: created.id });
    expect(replaced).toMatchObject({ name: "ci", scopes: ["lines:read"], line_ids: [f.line.id], replaces: created.id });
    expect((await get("/v1/lines", created.secret)).body.error.code).toBe("invalid_api_key");
    expect((await get("/v1/lines", replaced.secret)).status).toBe(200);
    await as(f).keys.revoke({ id: replaced.id });
    expect((await get("/v1/lines", replaced.secret)).body.error.code).toBe("invalid_api_key");
    expect((await as(f).keys.list()).find((k) => k.id === replaced.id)?.status).toBe("revoked");
  });

  it("refuses another account's lines, a past expiry and no scopes", async () => {
    const f = await makeAccount();
    const other = await makeAccount();
    const bad = await http("keys.create", { name: "x", scopes: ["lines:read"], line_ids: [other.line.id] }, f);
    expect(bad.body.error.data).toMatchObject({ code: "invalid_parameter_value", param: "line_ids" });
    const past = await http("keys.create", { name: "x", scopes: ["lines:read"], expires_at: Date.now() - 1000 }, f);
    expect(past.body.error.data).toMatchObject({ code: "invalid_parameter_value", param: "expires_at" });
    const none = await http("keys.create", { name: "x", scopes: [] }, f);
    expect(none.body.error.data).toMatchObject({ code: "invalid_parameter_value", param: "scopes" });
  });
});

describe("lines, chats and sending", () => {
  it("creates a simulated line, renames and deactivates it (sends are then refused), and reactivates it", async () => {
    const f = await makeAccount();
    const line = await as(f).lines.create({ label: "Support", service: "sms", advanced_features: false });
    expect(line).toMatchObject({ label: "Support", service: "sms", is_active: true });
    expect(line.handle).toMatch(/^\+155501\d{5}$/);
    expect((await as(f).lines.update({ id: line.id, label: "Sales" })).label).toBe("Sales");
    await as(f).lines.update({ id: line.id, is_active: false });
    const who = phone();
    await inbound({ ...f, line: { id: line.id, handle: line.handle } }, who, "hello");
    const refused = await post("/v1/messages", f.key, { from: line.handle, to: who, text: "hi" });
    expect(refused.body.error).toMatchObject({ code: "invalid_parameter_value", param: "from" });
    await as(f).lines.update({ id: line.id, is_active: true });
    expect((await post("/v1/messages", f.key, { from: line.handle, to: who, text: "hi" })).status).toBe(200);
  });

  it("searches chats, shows a conversation with reactions and replies, and sends from the page", async () => {
    const f = await makeAccount();
    const alice = phone();
    const first = await inbound(f, alice, "first message");
    await inbound(f, phone(), "someone else");
    // A second page of a search stays within the search (the cursor has conditions of its own).
    for (let i = 0; i < 3; i++) await inbound(f, `+1555777000${i}`, "searchable");
    const page1 = await as(f).chats.list({ from: f.line.handle, limit: 2, search: "5557770" });
    const page2 = await as(f).chats.list({ from: f.line.handle, limit: 2, search: "5557770", cursor: page1.next_cursor! });
    expect([...page1.data, ...page2.data].map((c) => c.identifier).sort()).toEqual(["+15557770000", "+15557770001", "+15557770002"]);
    const found = await as(f).chats.list({ from: f.line.handle, limit: 50, search: alice.slice(-6) });
    expect(found.data.map((c) => c.identifier)).toEqual([alice]);
    const chatId = found.data[0]!.id;
    await post("/api/simulator/reactions", f.key, { line: f.line.handle, from: alice, message_id: first.id, type: "love" });
    await inbound(f, alice, "a reply", { reply_to_guid: first.guid });
    const sent = await as(f).chats.send({ from: f.line.handle, to: chatId, text: "from the dashboard" });
    expect(sent).toMatchObject({ object: "outbox_item", status: "pending" });
    await vi.waitFor(async () => expect((await as(f).outbox.get({ id: sent.id })).status).toBe("sent"));

    const convo = await as(f).chats.messages({ chat_id: chatId, limit: 50 });
    expect(convo.chat).toMatchObject({ id: chatId, identifier: alice, line_handle: f.line.handle });
    const byText = Object.fromEntries(convo.data.map((m) => [m.text ?? "", m] as const));
    expect(byText["first message"]!.reactions.map((r) => r.type)).toEqual(["love"]);
    expect(byText["a reply"]!.reply_to).toMatchObject({ id: first.id, text: "first message" });
    expect(byText["from the dashboard"]).toMatchObject({ is_from_me: true, outbox_id: sent.id });
  });
});

describe("scheduled and held sends, send policy, capacity and pools", () => {
  it("schedules a send from the page, shows it held in the outbox and the conversation, reschedules and cancels it", async () => {
    const f = await makeAccount();
    await inbound(f, phone(), "hello");
    const chatId = (await as(f).chats.list({ from: f.line.handle, limit: 1 })).data[0]!.id;
    const at = Date.now() + 3_600_000;
    const sent = await as(f).chats.send({ from: f.line.handle, to: chatId, text: "see you tomorrow", send_at: at });
    const listed = (await as(f).outbox.list({ limit: 10, status: "pending" })).data.find((o) => o.id === sent.id);
    expect(listed).toMatchObject({ status: "pending", hold_reason: "scheduled", not_before: at });
    // The conversation shows it as pending with its hold, never the stored status 'held'.
    const unsent = await as(f).chats.unsent({ chat_id: chatId });
    expect(unsent).toEqual([expect.objectContaining({ outbox_id: sent.id, status: "pending", hold_reason: "scheduled", not_before: at, text: "see you tomorrow" })]);

    const past = await http("outbox.reschedule", { id: sent.id, send_at: Date.now() - 1000 }, f);
    expect(past.body.error.data).toMatchObject({ code: "invalid_parameter_value", param: "send_at" });
    const moved = await as(f).outbox.reschedule({ id: sent.id, send_at: at + 60_000 });
    expect(moved).toMatchObject({ status: "pending", hold_reason: "scheduled", not_before: at + 60_000 });

    const canceled = await as(f).outbox.cancel({ id: sent.id });
    expect(canceled).toMatchObject({ status: "failed", error: "canceled", hold_reason: null });
    expect(canceled.canceled_at).toBeGreaterThan(0);
    const again = await http("outbox.cancel", { id: sent.id }, f);
    expect(again.body.error.data).toMatchObject({ code: "outbox_item_not_cancelable", param: "id" });
    // The owner's own decision: the outbox keeps it, the conversation and the inbox row do not show it as a failure.
    expect((await as(f).chats.unsent({ chat_id: chatId })).map((u) => u.outbox_id)).not.toContain(sent.id);
  });

  it("reads and sets a line's send policy, naming the field a refusal is about, and shows its capacity", async () => {
    const f = await makeAccount();
    const before = await as(f).lines.policy({ line_id: f.line.id });
    expect(before).toMatchObject({ line: { id: f.line.id }, editable: true, policy: { contact_first: true, quiet_hours: null } });

    const badZone = await http("lines.setPolicy", { line_id: f.line.id, policy: { quiet_hours: { start: "21:00", end: "08:00", timezone: "Mars/Olympus" } } }, f);
    expect(badZone.status).toBe(400);
    expect(badZone.body.error.data).toMatchObject({ code: "invalid_parameter_value", param: "quiet_hours.timezone" });
    expect(badZone.body.error.message).toMatch(/IANA time zone/);
    const badBudget = await http("lines.setPolicy", { line_id: f.line.id, policy: { new_contacts_per_hour: -1 } }, f);
    expect(badBudget.body.error.data).toMatchObject({ code: "invalid_parameter_value", param: "new_contacts_per_hour" });
    const unknown = await http("lines.setPolicy", { line_id: f.line.id, policy: { nonsense: 1 } }, f);
    expect(unknown.body.error.data).toMatchObject({ code: "invalid_parameter_value" });

    const quiet = { start: "21:00", end: "08:00", timezone: "Europe/Berlin" };
    const saved = await as(f).lines.setPolicy({
      line_id: f.line.id,
      policy: { contact_first: false, new_contacts_per_hour: 5, new_contacts_per_day: null, quiet_hours: quiet, rate_per_second: 2 },
    });
    expect(saved.policy).toEqual({ contact_first: false, new_contacts_per_hour: 5, new_contacts_per_day: null, quiet_hours: quiet, rate_per_second: 2 });
    expect((await as(f).lines.policy({ line_id: f.line.id })).policy).toEqual(saved.policy);
    expect((await as(f).lines.list()).data.find((l) => l.id === f.line.id)?.send_policy).toEqual(saved.policy);

    const capacity = await as(f).lines.capacity({ from: f.line.handle });
    expect(capacity.lines).toEqual([
      expect.objectContaining({
        line_id: f.line.id,
        new_contacts: { hour: { used: 0, limit: 5, remaining: 5, resets_at: null }, day: { used: 0, limit: null, remaining: null, resets_at: null } },
        quiet_hours: expect.objectContaining({ active: expect.any(Boolean) }),
        queued: { scheduled: 0, quiet_hours: 0, new_contact_budget: 0, line_rate: 0, line_unavailable: 0, approval: 0 },
      }),
    ]);

    // The shared sandbox line's policy is the operator's, never an account's to change.
    const sandbox = (await as(f).lines.list()).data.find((l) => l.is_sandbox);
    if (sandbox) {
      const refused = await http("lines.setPolicy", { line_id: sandbox.id, policy: { contact_first: false } }, f);
      expect(refused.body.error.data).toMatchObject({ code: "line_not_found" });
    }
  });

  it("creates a pool of the account's lines, adds and removes a line, refuses a second pool of the same name, and deletes it", async () => {
    const f = await makeAccount();
    const second = await as(f).lines.create({ label: "Second", service: "imessage", advanced_features: false });
    const pool = await as(f).pools.create({ name: "Outreach", line_ids: [f.line.id] });
    expect(pool).toMatchObject({ object: "pool", name: "Outreach", line_ids: [f.line.id] });
    expect(pool.id).toMatch(/^pool_/);
    expect((await as(f).pools.addLine({ pool_id: pool.id, line_id: second.id })).line_ids).toEqual([f.line.id, second.id]);
    expect((await as(f).lines.capacity({ from: pool.id })).lines.map((l) => l.line_id)).toEqual([f.line.id, second.id]);
    expect((await as(f).pools.removeLine({ pool_id: pool.id, line_id: f.line.id })).line_ids).toEqual([second.id]);
    const dup = await http("pools.create", { name: "Outreach", line_ids: [] }, f);
    expect(dup.body.error.data).toMatchObject({ code: "invalid_parameter_value", param: "name" });
    expect(await as(f).pools.delete({ id: pool.id })).toMatchObject({ id: pool.id, deleted: true });
    expect((await as(f).pools.list()).data).toEqual([]);
  });
});

describe("tenancy", () => {
  it("every procedure, called by another account with this account's IDs, returns nothing of it", async () => {
    const a = await makeAccount();
    const b = await makeAccount();
    const alice = phone();
    const m = await inbound(a, alice, "private");
    const chatId = (await as(a).chats.list({ from: a.line.handle, limit: 1 })).data[0]!.id;
    const item = await as(a).chats.send({ from: a.line.handle, to: chatId, text: "secret reply" });
    const key = await as(a).keys.create({ name: "a", scopes: ["lines:read"] });
    const hook = await as(a).webhooks.create({ from: a.line.handle, url: "https://example.com/hook", events: ["message.received"] });
    const pool = await as(a).pools.create({ name: "a's pool", line_ids: [a.line.id] });
    const later = await as(a).chats.send({ from: a.line.handle, to: chatId, text: "secret later", send_at: Date.now() + 3_600_000 });
    const outsider = as(b);
    const dlvId = "dlv_01aaaaaaaaaaaaaaaaaaaaaaaa";

    // One call per procedure; a new procedure fails the coverage check below until added here.
    const calls: Record<string, () => Promise<unknown>> = {
      "account.signUp": async () => "public",
      "account.me": () => outsider.account.me(),
      "keys.list": () => outsider.keys.list(),
      "keys.create": async () => "own account only",
      "keys.revoke": () => outsider.keys.revoke({ id: key.id }),
      "keys.replace": () => outsider.keys.replace({ id: key.id }),
      "keys.setGuardrails": () => outsider.keys.setGuardrails({ id: key.id, guardrails: { max_sends_per_day: 1 } }),
      "lines.list": () => outsider.lines.list(),
      "lines.create": async () => "own account only",
      "lines.update": () => outsider.lines.update({ id: a.line.id, label: "pwned" }),
      "lines.connections": () => outsider.lines.connections(),
      "lines.connect": () => outsider.lines.connect({ line_id: a.line.id, provider: "simulated" }),
      "lines.test": () => outsider.lines.test({ line_id: a.line.id }),
      "lines.add": async () => "own account only",
      "chats.inbox": () => outsider.chats.inbox({ limit: 100 }),
      "chats.unsent": () => outsider.chats.unsent({ chat_id: chatId }),
      "chats.markRead": () => outsider.chats.markRead({ id: chatId }),
      "chats.retry": () => outsider.chats.retry({ id: item.id }),
      "chats.takeover": () => outsider.chats.takeover({ id: chatId }),
      "chats.pause": () => outsider.chats.pause({ id: chatId }),
      "chats.resume": () => outsider.chats.resume({ id: chatId }),
      "stats.overview": () => outsider.stats.overview({ time_zone: "UTC" }),
      "chats.list": () => outsider.chats.list({ from: a.line.handle, limit: 50 }),
      "chats.get": () => outsider.chats.get({ id: chatId }),
      "chats.messages": () => outsider.chats.messages({ chat_id: chatId, limit: 50 }),
      "chats.send": () => outsider.chats.send({ from: a.line.handle, to: chatId, text: "x" }),
      "search.messages": () => outsider.search.messages({ query: "private", chat_id: chatId }),
      "outbox.list": () => outsider.outbox.list({ limit: 100 }),
      "outbox.get": () => outsider.outbox.get({ id: item.id }),
      "outbox.cancel": () => outsider.outbox.cancel({ id: later.id }),
      "outbox.reschedule": () => outsider.outbox.reschedule({ id: later.id, send_at: Date.now() + 7_200_000 }),
      "outbox.approvals": () => outsider.outbox.approvals({ limit: 100, chat_id: chatId }),
      "outbox.approvalCount": () => outsider.outbox.approvalCount(),
      "outbox.approve": () => outsider.outbox.approve({ id: later.id }),
      "outbox.reject": () => outsider.outbox.reject({ id: later.id }),
      "lines.policy": () => outsider.lines.policy({ line_id: a.line.id }),
      "lines.setPolicy": () => outsider.lines.setPolicy({ line_id: a.line.id, policy: { contact_first: false } }),
      "lines.capacity": () => outsider.lines.capacity({ from: a.line.id }),
      "pools.list": () => outsider.pools.list(),
      // Another account's line cannot join a pool: refused as keys.create refuses it.
      "pools.create": () =>
        outsider.pools.create({ name: "x", line_ids: [a.line.id] }).then(
          () => expect.fail("pools.create took another account's line"),
          (err) => {
            expect((err as { cause?: unknown }).cause).toMatchObject({ code: "invalid_parameter_value", param: "line_ids" });
            return "refused";
          },
        ),
      "pools.addLine": () => outsider.pools.addLine({ pool_id: pool.id, line_id: a.line.id }),
      "pools.removeLine": () => outsider.pools.removeLine({ pool_id: pool.id, line_id: a.line.id }),
      "pools.delete": () => outsider.pools.delete({ id: pool.id }),
      "sandbox.get": () => outsider.sandbox.get(),
      "sandbox.activate": async () => "own account only",
      "webhooks.get": () => outsider.webhooks.get({ id: hook.id }),
      "webhooks.list": () => outsider.webhooks.list({ limit: 100 }),
      "webhooks.create": () => outsider.webhooks.create({ from: a.line.handle, url: "https://example.com/x", events: ["message.received"] }),
      "webhooks.delete": () => outsider.webhooks.delete({ id: hook.id }),
      "webhooks.deliveries": () => outsider.webhooks.deliveries({ webhook_id: hook.id, limit: 100 }),
      "webhooks.delivery": () => outsider.webhooks.delivery({ id: dlvId }),
      "webhooks.resend": () => outsider.webhooks.resend({ webhook_id: hook.id, since: 0 }),
      "webhooks.rotateSecret": () => outsider.webhooks.rotateSecret({ id: hook.id }),
      "webhooks.enable": () => outsider.webhooks.enable({ id: hook.id }),
      "webhooks.disable": () => outsider.webhooks.disable({ id: hook.id }),
      "simulator.message": () => outsider.simulator.message({ line: a.line.handle, from: alice, text: "x" }),
      "simulator.reaction": () => outsider.simulator.reaction({ line: a.line.handle, from: alice, message_id: m.id, type: "like", added: true }),
      "simulator.typing": () => outsider.simulator.typing({ line: a.line.handle, from: alice, is_typing: true }),
      "simulator.inbox": () => outsider.simulator.inbox({ line: a.line.handle, contact: alice, limit: 100 }),
      "simulator.status": () => outsider.simulator.status(),
    };
    expect(Object.keys(calls).sort()).toEqual(Object.keys(appRouter._def.procedures).sort());

    const secrets = [a.accountId, a.line.id, a.line.handle, chatId, m.id, item.id, key.id, hook.id, pool.id, later.id, "private", "secret reply", "secret later"];
    for (const [name, call] of Object.entries(calls)) {
      let result: unknown;
      try {
        result = await call();
      } catch (err) {
        const code = (err as { cause?: { code?: string } }).cause?.code;
        expect(code, name).toMatch(/not_found|not_accessible/);
        continue;
      }
      const text = JSON.stringify(result);
      for (const s of secrets) expect(text.includes(s), `${name} leaked ${s}`).toBe(false);
    }
    // And nothing changed: A's webhook, key and line are as they were.
    expect((await as(a).webhooks.get({ id: hook.id })).is_active).toBe(true);
    expect((await as(a).keys.list()).find((k) => k.id === key.id)?.status).toBe("active");
    expect((await as(a).lines.list()).data.find((l) => l.id === a.line.id)?.label).toBeNull();
    expect((await as(a).outbox.get({ id: later.id })).hold_reason).toBe("scheduled");
    expect((await as(a).lines.policy({ line_id: a.line.id })).policy.contact_first).toBe(true);
    expect((await as(a).chats.get({ id: chatId })).paused_at).toBeNull();
    expect((await as(a).keys.list()).find((k) => k.id === key.id)?.guardrails.max_sends_per_day).toBeNull();
    expect((await as(a).pools.list()).data).toEqual([expect.objectContaining({ id: pool.id, line_ids: [a.line.id] })]);
  });
});

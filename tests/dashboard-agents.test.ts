import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { sessionActorFor } from "@/server/services/access/session";
import { startRunner, stopRunner } from "@/server/engine/outbox-runner";
import { handleTrpc } from "@/server/transports/trpc/handle-trpc";
import { createCaller } from "@/server/transports/trpc/router";
import { call, db, inbound, makeAccount, makeKey, phone, post, recordQueries, type Fixture } from "./helpers";

// The dashboard's side of agent guardrails (tRPC): guardrails set on a key at creation and
// later, the approval queue with each waiting send's context (in a fixed number of queries),
// approve and reject, and pausing a chat with who paused it.

beforeAll(() => startRunner());
afterAll(() => stopRunner());

/** The owner signed in: the session's actor carries the user, as the dashboard's does. */
async function ownerActor(f: Fixture) {
  const account = await (await db()).account.findUniqueOrThrow({ where: { id: f.accountId }, select: { ownerId: true } });
  return { ...sessionActorFor(f.accountId), userId: account.ownerId! };
}
const as = async (f: Fixture) => createCaller({ actor: await ownerActor(f), requestId: "req_test" });

async function http(procedure: string, input: unknown, f: Fixture) {
  const actor = await ownerActor(f);
  const req = new Request(`http://localhost/api/trpc/${procedure}`, { method: "POST", body: JSON.stringify(input), headers: { "content-type": "application/json" } });
  const res = await handleTrpc(req, async () => actor);
  return { status: res.status, body: await res.json() };
}

const send = (key: string, body: Record<string, unknown>) => post("/v1/messages", key, body);

async function upload(key: string, filename: string) {
  const res = await call("POST", "/v1/files", { key, raw: new Uint8Array([1, 2, 3, 4]), headers: { "content-type": "image/png", "x-filename": filename } });
  return res.body.id as string;
}

describe("guardrails on keys", () => {
  it("sets them at creation, changes them later, lists them, and refuses outbox:approve with the server's sentence", async () => {
    const f = await makeAccount();
    const owner = await as(f);
    const alice = phone();
    const created = await owner.keys.create({
      name: "agent",
      scopes: ["messages:write", "chats:read"],
      guardrails: { allow_to: [alice, "cht_01aaaaaaaaaaaaaaaaaaaaaaaa"], require_approval: true, max_sends_per_day: 50 },
    });
    expect(created.guardrails).toEqual({ allow_to: [alice, "cht_01aaaaaaaaaaaaaaaaaaaaaaaa"], require_approval: true, max_sends_per_chat_without_reply: null, max_sends_per_day: 50 });
    const changed = await owner.keys.setGuardrails({ id: created.id, guardrails: { allow_to: null, max_sends_per_chat_without_reply: 3, max_sends_per_day: null } });
    expect(changed.guardrails).toEqual({ allow_to: null, require_approval: true, max_sends_per_chat_without_reply: 3, max_sends_per_day: null });
    expect((await owner.keys.list()).find((k) => k.id === created.id)?.guardrails).toEqual(changed.guardrails);
    // Cleared: the key has no guardrails and could then hold outbox:approve.
    const cleared = await owner.keys.setGuardrails({ id: created.id, guardrails: { require_approval: false, max_sends_per_chat_without_reply: null } });
    expect(cleared.guardrails).toEqual({ allow_to: null, require_approval: false, max_sends_per_chat_without_reply: null, max_sends_per_day: null });

    const refused = await http("keys.create", { name: "bad", scopes: ["messages:write", "outbox:approve"], guardrails: { require_approval: true } }, f);
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toMatch(/cannot hold the 'outbox:approve' scope/);
    expect(refused.body.error.data).toMatchObject({ code: "invalid_parameter_value", param: "scopes" });
    const supervisor = await owner.keys.create({ name: "supervisor", scopes: ["outbox:approve"] });
    const later = await http("keys.setGuardrails", { id: supervisor.id, guardrails: { max_sends_per_day: 5 } }, f);
    expect(later.body.error.message).toMatch(/cannot hold the 'outbox:approve' scope/);
    const zero = await http("keys.setGuardrails", { id: created.id, guardrails: { max_sends_per_day: 0 } }, f);
    expect(zero.body.error.data).toMatchObject({ code: "invalid_parameter_value", param: "guardrails.max_sends_per_day" });
  });
});

describe("the approval queue", () => {
  it("lists each waiting send with what, to whom, which key, when and the chat's last messages; approve sends it, reject fails it", async () => {
    const f = await makeAccount();
    const owner = await as(f);
    const alice = phone();
    for (let i = 1; i <= 7; i++) await inbound(f, alice, `message ${i}`);
    const agent = await makeKey(f.accountId, { guardrails: { require_approval: true } });
    const fileId = await upload(agent, "quote.png");
    const chat = (await owner.chats.list({ from: f.line.handle, limit: 1 })).data[0]!;
    const first = await send(agent, { from: f.line.handle, to: alice, text: "Here is the quote", attachments: [fileId] });
    const second = await send(agent, { from: f.line.handle, to: alice, text: "Shall I book it?", send_at: Date.now() + 3_600_000 });
    expect(await owner.outbox.approvalCount()).toBe(2);

    const queue = await owner.outbox.approvals({ limit: 50 });
    expect(queue.data.map((i) => i.id)).toEqual([first.body.id, second.body.id]);
    const [a, b] = queue.data;
    expect(a).toMatchObject({
      status: "pending",
      hold_reason: "approval",
      text: "Here is the quote",
      attachments: [{ id: fileId, filename: "quote.png", mime_type: "image/png", size: 4 }],
      chat: { id: chat.id, identifier: alice, paused_at: null },
      line: { id: f.line.id, handle: f.line.handle },
      api_key: { name: "agent", prefix: expect.stringMatching(/^sk_live_/) },
      send_at: null,
    });
    expect(a!.created_at).toBeGreaterThan(Date.now() - 60_000);
    // The chat's last five messages, oldest first.
    expect(a!.context.map((m) => m.text)).toEqual(["message 3", "message 4", "message 5", "message 6", "message 7"]);
    expect(a!.context[0]).toMatchObject({ is_from_me: false, sender: alice });
    expect(b!.send_at).toBeGreaterThan(Date.now());
    expect((await owner.outbox.approvals({ limit: 50, chat_id: chat.id })).data).toHaveLength(2);
    expect((await owner.outbox.approvals({ limit: 50, chat_id: "cht_01aaaaaaaaaaaaaaaaaaaaaaaa" })).data).toEqual([]);
    const page1 = await owner.outbox.approvals({ limit: 1 });
    const page2 = await owner.outbox.approvals({ limit: 1, cursor: page1.next_cursor! });
    expect([...page1.data, ...page2.data].map((i) => i.id)).toEqual([first.body.id, second.body.id]);

    const approved = await owner.outbox.approve({ id: first.body.id });
    expect(approved).toMatchObject({ id: first.body.id, status: "pending", hold_reason: null });
    await vi.waitFor(async () => expect((await owner.outbox.get({ id: first.body.id })).status).toBe("sent"), { timeout: 15_000 });
    const rejected = await owner.outbox.reject({ id: second.body.id });
    expect(rejected).toMatchObject({ status: "failed", error: "rejected" });
    expect((await owner.outbox.approvals({ limit: 50 })).data).toEqual([]);
    expect(await owner.outbox.approvalCount()).toBe(0);
    // Reviewed once: a second decision is refused with the reason.
    const again = await http("outbox.approve", { id: second.body.id }, f);
    expect(again.status).toBe(409);
    expect(again.body.error.data).toMatchObject({ code: "outbox_item_not_reviewable", param: "id" });
    const reviewed = await (await db()).outboxItem.findUniqueOrThrow({ where: { id: second.body.id } });
    expect(reviewed.reviewedBy).toMatch(/^usr_/);
  });

  it("reads a page in the same number of queries whatever it holds", async () => {
    const f = await makeAccount();
    const owner = await as(f);
    const agent = await makeKey(f.accountId, { guardrails: { require_approval: true } });
    const contacts = [phone(), phone(), phone(), phone()];
    for (const c of contacts) await inbound(f, c, `hello from ${c}`);
    const one = await send(agent, { from: f.line.handle, to: contacts[0], text: "just one", attachments: [await upload(agent, "a.png")] });
    const single = await recordQueries(() => owner.outbox.approvals({ limit: 50 }));
    expect(single.result.data.map((i) => i.id)).toEqual([one.body.id]);
    for (const c of contacts) {
      await send(agent, { from: f.line.handle, to: c, text: `to ${c}`, attachments: [await upload(agent, `${c}.png`)] });
      const m = (await (await db()).message.findFirstOrThrow({ where: { accountId: f.accountId, text: `hello from ${c}` } })).id;
      await post("/v1/reactions", agent, { from: f.line.handle, to: (await owner.chats.list({ from: f.line.handle, limit: 50, search: c })).data[0]!.id, message_id: m, type: "love" });
    }
    const many = await recordQueries(() => owner.outbox.approvals({ limit: 50 }));
    expect(many.result.data).toHaveLength(1 + contacts.length * 2);
    const reaction = many.result.data.find((i) => i.kind === "reaction")!;
    expect(reaction.reaction).toMatchObject({ type: "love", message_text: expect.stringMatching(/^hello from/) });
    // The reactions' target messages are one more query; nothing grows with the number of items.
    // Bookkeeping of earlier requests that lands meanwhile (a key's last use, rate counters) is
    // not the page's: CI, busier, once counted one of them.
    const own = (statements: string[]) => statements.filter((q) => !/"ApiKey"|"RateCounter"/.test(q) || q.trimStart().startsWith("SELECT")).length;
    expect(own(many.statements)).toBeLessThanOrEqual(own(single.statements) + 1);
  });
});

describe("human takeover", () => {
  it("pauses a chat (naming the signed-in user), refuses the agent meanwhile, and resumes it; a key that paused is named by its name", async () => {
    const f = await makeAccount();
    const owner = await as(f);
    const alice = phone();
    await inbound(f, alice, "hi");
    const chat = (await owner.chats.list({ from: f.line.handle, limit: 1 })).data[0]!;
    const agent = await makeKey(f.accountId, { guardrails: { max_sends_per_day: 10 } });
    expect(await owner.chats.takeover({ id: chat.id })).toEqual({ object: "chat_takeover", chat_id: chat.id, paused_at: null, paused_by: null });

    const paused = await owner.chats.pause({ id: chat.id });
    expect(paused.paused_by).toMatch(/^usr_/);
    const takeover = await owner.chats.takeover({ id: chat.id });
    expect(takeover).toMatchObject({ paused_at: paused.paused_at, paused_by: { kind: "user", name: f.email } });
    expect((await send(agent, { from: f.line.handle, to: alice, text: "during" })).body.error.code).toBe("chat_paused");
    // The owner's own sends from the page still go.
    expect(await owner.chats.send({ from: f.line.handle, to: chat.id, text: "a person here" })).toMatchObject({ status: "pending" });
    expect(await owner.chats.resume({ id: chat.id })).toMatchObject({ paused_at: null, paused_by: null });
    expect((await send(agent, { from: f.line.handle, to: alice, text: "after" })).status).toBe(200);

    await post(`/v1/chats/pause?id=${chat.id}`, f.key);
    expect((await owner.chats.takeover({ id: chat.id })).paused_by).toMatchObject({ kind: "api_key", name: "test" });
    // A dashboard session without a user (the operator's tools) is named by the account.
    await owner.chats.resume({ id: chat.id });
    await createCaller({ actor: sessionActorFor(f.accountId), requestId: "req_test" }).chats.pause({ id: chat.id });
    expect((await owner.chats.takeover({ id: chat.id })).paused_by).toMatchObject({ kind: "account", name: f.email });
  });

  it("names nobody of another account, and another account can neither read nor change the pause", async () => {
    const a = await makeAccount();
    const b = await makeAccount();
    await inbound(a, phone(), "hi");
    const chat = (await (await as(a)).chats.list({ from: a.line.handle, limit: 1 })).data[0]!;
    await (await as(a)).chats.pause({ id: chat.id });
    const outsider = await as(b);
    for (const attempt of [() => outsider.chats.takeover({ id: chat.id }), () => outsider.chats.resume({ id: chat.id }), () => outsider.chats.pause({ id: chat.id })]) {
      await expect(attempt()).rejects.toMatchObject({ cause: { code: "chat_not_found" } });
    }
    expect((await (await as(a)).chats.takeover({ id: chat.id })).paused_by).toMatchObject({ kind: "user", name: a.email });
  });
});

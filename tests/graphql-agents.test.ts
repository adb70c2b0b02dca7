import { beforeEach, describe, expect, it, vi } from "vitest";
import type { Actor } from "@/server/services/access/actor";
import { sessionActorFor } from "@/server/services/access/session";
import { db, gql, inbound, makeAccount, makeKey, phone, runDelivery, subscribe, type ApiResult, type Fixture } from "./helpers";

// Guardrails of API keys, approval holds and human takeover through GraphQL (docs/agents.md):
// the mutations call the services /v1 calls, so every guardrail refuses with its code in
// extensions.code; approve, reject, pause and resume need outbox:approve (a guarded key never
// holds it, the dashboard session holds every scope); a key's guardrails are read and changed
// by the owner's session alone, never through an API key.

runDelivery();

// GraphQL reads the dashboard session through next-auth, which needs Next's request scope: it
// is supplied here instead (as in graphql-security.test.ts).
const session = vi.hoisted(() => ({ actor: null as Actor | null }));
vi.mock("@/server/services/access/session", async (importOriginal) => ({
  ...(await importOriginal<typeof import("@/server/services/access/session")>()),
  sessionActor: async () => session.actor,
}));
const COOKIE = "next-auth.session-token=eyJhbGciOiJkaXIifQ.signed";
beforeEach(() => {
  session.actor = null;
});

/** The signed-in owner of `f` (the account's user). */
async function ownerActor(f: Fixture): Promise<Actor> {
  const account = await (await db()).account.findUniqueOrThrow({ where: { id: f.accountId } });
  return { ...sessionActorFor(f.accountId), userId: account.ownerId ?? undefined };
}

/** An operation as the signed-in owner of `f`. */
async function asOwner(f: Fixture, query: string, variables?: Record<string, unknown>) {
  session.actor = await ownerActor(f);
  return gql(null, query, variables, { cookie: COOKIE });
}

function dataOf(res: ApiResult, field: string) {
  expect(res.status).toBe(200);
  expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
  return res.body.data[field];
}

/** A send that was accepted (the runner may have taken it on already). */
function accepted(res: ApiResult) {
  const item = dataOf(res, "sendMessage");
  expect(item).toMatchObject({ id: expect.stringMatching(/^obx_/), error: null });
  expect(["pending", "claimed", "sent"]).toContain(item.status);
  return item;
}

/** The one error of a refused operation, whose field answers null. */
function errorOf(res: ApiResult) {
  expect(res.status).toBe(200);
  const error = res.body.errors?.[0];
  expect(error, JSON.stringify(res.body)).toBeDefined();
  expect(res.body.errors).toHaveLength(1);
  expect(error.extensions.request_id).toBe(res.headers.get("request-id"));
  return error.extensions as { code: string; type: string; param?: string };
}

const ITEM = "id status holdReason notBefore error completedAt";
const SEND = `mutation($input: SendMessageInput!) { sendMessage(input: $input) { ${ITEM} } }`;
const APPROVE = `mutation($id: String!) { approveOutboxItem(id: $id) { ${ITEM} } }`;
const REJECT = `mutation($id: String!) { rejectOutboxItem(id: $id) { ${ITEM} } }`;
const OUTBOX_ITEM = `query($id: String!) { outboxItem(id: $id) { ${ITEM} } }`;
const CHAT_FIELDS = "id identifier pausedAt pausedBy";
const PAUSE = `mutation($id: String!) { pauseChat(id: $id) { ${CHAT_FIELDS} } }`;
const RESUME = `mutation($id: String!) { resumeChat(id: $id) { ${CHAT_FIELDS} } }`;
const GUARDRAILS = "guardrails { allowTo requireApproval maxSendsPerChatWithoutReply maxSendsPerDay }";
const API_KEYS = `{ apiKeys { id name status scopes ${GUARDRAILS} } }`;
const SET_GUARDRAILS = `mutation($id: String!, $guardrails: ApiKeyGuardrailsInput!) { setApiKeyGuardrails(id: $id, guardrails: $guardrails) { id ${GUARDRAILS} } }`;

/** A fixture with a contact that wrote to its line (so the line may send to it), and their chat. */
async function withContact() {
  const f = await makeAccount();
  const alice = phone();
  await inbound(f, alice, "hi");
  const chat = await (await db()).chat.findFirstOrThrow({ where: { lineId: f.line.id, identifier: alice } });
  return { f, alice, chat };
}

const outboxCount = async (f: Fixture) => (await db()).outboxItem.count({ where: { accountId: f.accountId } });

/** The key_ ID of the key created last in the account (makeKey answers the secret only). */
async function lastKeyId(f: Fixture): Promise<string> {
  return (await (await db()).apiKey.findFirstOrThrow({ where: { accountId: f.accountId }, orderBy: { id: "desc" } })).id;
}

describe("GraphQL: guardrails refuse sends with their codes", () => {
  it("allow_to: recipient_not_allowed (naming `to`) for sendMessage, sendReaction and sendTyping; nothing is stored", async () => {
    const { f, alice } = await withContact();
    const bob = phone();
    const m = await inbound(f, bob, "from bob");
    const agent = await makeKey(f.accountId, { guardrails: { allow_to: [alice] } });
    accepted(await gql(agent, SEND, { input: { from: f.line.handle, to: alice, text: "listed" } }));
    const before = await outboxCount(f);
    const refused = await gql(agent, SEND, { input: { from: f.line.handle, to: bob, text: "not listed" } });
    expect(errorOf(refused)).toEqual({ code: "recipient_not_allowed", type: "authorization_error", param: "to", request_id: expect.stringMatching(/^req_/) });
    expect(refused.body.data).toBeNull();
    const reaction = await gql(agent, `mutation($input: SendReactionInput!) { sendReaction(input: $input) { id } }`, {
      input: { from: f.line.handle, to: bob, messageId: m.id, type: "love" },
    });
    expect(errorOf(reaction)).toMatchObject({ code: "recipient_not_allowed", param: "to" });
    const typing = await gql(agent, `mutation($input: SendTypingInput!) { sendTyping(input: $input) { id } }`, { input: { from: f.line.handle, to: bob } });
    expect(errorOf(typing)).toMatchObject({ code: "recipient_not_allowed", param: "to" });
    expect(await outboxCount(f)).toBe(before);
    // The owner's key has no guardrails: the same send goes.
    accepted(await gql(f.key, SEND, { input: { from: f.line.handle, to: bob, text: "owner" } }));
  });

  it("max_sends_per_chat_without_reply: reply_required until the contact writes", async () => {
    const { f, alice } = await withContact();
    const agent = await makeKey(f.accountId, { guardrails: { max_sends_per_chat_without_reply: 2 } });
    const send = (text: string) => gql(agent, SEND, { input: { from: f.line.handle, to: alice, text } });
    accepted(await send("1"));
    accepted(await send("2"));
    expect(errorOf(await send("3"))).toMatchObject({ code: "reply_required", type: "authorization_error", param: "to" });
    await inbound(f, alice, "a reply");
    accepted(await send("3"));
  });

  it("max_sends_per_day: key_send_limit_exceeded once the key has sent its day's worth", async () => {
    const { f, alice } = await withContact();
    const bob = phone();
    await inbound(f, bob);
    const agent = await makeKey(f.accountId, { guardrails: { max_sends_per_day: 1 } });
    accepted(await gql(agent, SEND, { input: { from: f.line.handle, to: alice, text: "the one" } }));
    const before = await outboxCount(f);
    const over = await gql(agent, SEND, { input: { from: f.line.handle, to: bob, text: "one more" } });
    expect(errorOf(over)).toMatchObject({ code: "key_send_limit_exceeded", type: "rate_limit_error" });
    expect(await outboxCount(f)).toBe(before);
  });

  it("a paused chat: chat_paused for a guarded key; the owner's key still sends", async () => {
    const { f, alice, chat } = await withContact();
    const agent = await makeKey(f.accountId, { guardrails: { max_sends_per_day: 100 } });
    dataOf(await gql(f.key, PAUSE, { id: chat.id }), "pauseChat");
    const refused = await gql(agent, SEND, { input: { from: f.line.handle, to: chat.id, text: "during" } });
    expect(errorOf(refused)).toMatchObject({ code: "chat_paused", type: "invalid_request_error", param: "to" });
    expect(errorOf(await gql(agent, SEND, { input: { from: f.line.handle, to: alice, text: "by number" } }))).toMatchObject({ code: "chat_paused" });
    accepted(await gql(f.key, SEND, { input: { from: f.line.handle, to: alice, text: "a person" } }));
  });
});

describe("GraphQL: approval of held sends", () => {
  async function setup() {
    const { f, alice } = await withContact();
    const agent = await makeKey(f.accountId, { guardrails: { require_approval: true } });
    const held = dataOf(await gql(agent, SEND, { input: { from: f.line.handle, to: alice, text: "may I?" } }), "sendMessage");
    return { f, alice, agent, held };
  }

  it("a send by a key that requires approval waits (pending, holdReason approval); the owner's session approves it and it is sent", async () => {
    const { f, alice, held } = await setup();
    expect(held).toMatchObject({ status: "pending", holdReason: "approval", notBefore: null });
    const waiting = dataOf(await gql(f.key, `{ outbox(status: pending) { edges { node { id holdReason } } } }`), "outbox");
    expect(waiting.edges).toEqual([{ node: { id: held.id, holdReason: "approval" } }]);
    // The owner's queue: only the sends held for approval, not a scheduled one.
    const later = accepted(await gql(f.key, SEND, { input: { from: f.line.handle, to: alice, text: "later", sendAt: Date.now() + 3_600_000 } }));
    const QUEUE = `query($r: HoldReason) { outbox(holdReason: $r) { edges { node { id } } } }`;
    expect(dataOf(await gql(f.key, QUEUE, { r: "approval" }), "outbox").edges).toEqual([{ node: { id: held.id } }]);
    expect(dataOf(await gql(f.key, QUEUE, { r: "scheduled" }), "outbox").edges).toEqual([{ node: { id: later.id } }]);
    expect(errorOf(await gql(f.key, QUEUE, { r: "line_rate" }))).toMatchObject({ code: "invalid_parameter_value", param: "holdReason" });
    const approved = dataOf(await asOwner(f, APPROVE, { id: held.id }), "approveOutboxItem");
    expect(approved).toMatchObject({ id: held.id, holdReason: null, error: null });
    expect(["pending", "claimed", "sent"]).toContain(approved.status);
    await vi.waitFor(async () => expect(dataOf(await gql(f.key, OUTBOX_ITEM, { id: held.id }), "outboxItem").status).toBe("sent"), { timeout: 15_000 });
    const row = await (await db()).outboxItem.findUniqueOrThrow({ where: { id: held.id } });
    expect(row.reviewedBy).toBe((await ownerActor(f)).userId);
    // Decided once: a second approval or a rejection is refused.
    expect(errorOf(await asOwner(f, APPROVE, { id: held.id }))).toMatchObject({ code: "outbox_item_not_reviewable", param: "id" });
    expect(errorOf(await asOwner(f, REJECT, { id: held.id }))).toMatchObject({ code: "outbox_item_not_reviewable", param: "id" });
  });

  it("a key with outbox:approve rejects a held send: it fails with error rejected and never goes", async () => {
    const { f, held } = await setup();
    const rejected = dataOf(await gql(f.key, REJECT, { id: held.id }), "rejectOutboxItem");
    expect(rejected).toMatchObject({ id: held.id, status: "failed", holdReason: null, error: "rejected", completedAt: expect.any(Number) });
    expect(errorOf(await gql(f.key, APPROVE, { id: held.id }))).toMatchObject({ code: "outbox_item_not_reviewable", param: "id" });
    expect(dataOf(await gql(f.key, OUTBOX_ITEM, { id: held.id }), "outboxItem")).toMatchObject({ status: "failed", error: "rejected" });
  });

  it("a send that is not waiting for approval is not reviewable; unknown and malformed IDs are not found", async () => {
    const { f, alice } = await withContact();
    const plain = dataOf(await gql(f.key, SEND, { input: { from: f.line.handle, to: alice, text: "no approval needed" } }), "sendMessage");
    expect(errorOf(await gql(f.key, APPROVE, { id: plain.id }))).toMatchObject({ code: "outbox_item_not_reviewable", param: "id" });
    expect(errorOf(await gql(f.key, REJECT, { id: "obx_01unknownunknownunknown00" }))).toMatchObject({ code: "outbox_item_not_found", param: "id" });
    expect(errorOf(await gql(f.key, APPROVE, { id: "" }))).toMatchObject({ code: "invalid_parameter_value", param: "id" });
  });

  it("needs outbox:approve: the agent cannot approve its own send, nor can a key without the scope; another account cannot see it", async () => {
    const { f, agent, held } = await setup();
    const writer = await makeKey(f.accountId, { scopes: ["messages:write", "outbox:read"] });
    for (const key of [agent, writer]) {
      expect(errorOf(await gql(key, APPROVE, { id: held.id }))).toMatchObject({ code: "insufficient_scope", type: "authorization_error" });
      expect(errorOf(await gql(key, REJECT, { id: held.id }))).toMatchObject({ code: "insufficient_scope" });
    }
    const other = await makeAccount();
    expect(errorOf(await gql(other.key, APPROVE, { id: held.id }))).toMatchObject({ code: "outbox_item_not_found" });
    expect(errorOf(await asOwner(other, REJECT, { id: held.id }))).toMatchObject({ code: "outbox_item_not_found" });
    expect(await (await db()).outboxItem.findUniqueOrThrow({ where: { id: held.id } })).toMatchObject({ status: "held", holdReason: "approval", reviewedAt: null });
  });
});

describe("GraphQL: a key with guardrails reaches only its own sends", () => {
  const LIST = `query($from: String, $status: OutboxStatus) { outbox(from: $from, status: $status) { edges { node { id } } } }`;
  const CANCEL = `mutation($id: String!) { cancelOutboxItem(id: $id) { ${ITEM} } }`;
  const RESCHEDULE = `mutation($id: String!, $sendAt: Timestamp!) { rescheduleOutboxItem(id: $id, sendAt: $sendAt) { ${ITEM} } }`;
  const UPDATES = `subscription { outboxItemUpdated { status outboxId item { id } } }`;

  it("outbox, outboxItem, cancelOutboxItem and rescheduleOutboxItem: another's send is outbox_item_not_found; an unguarded key sees all", async () => {
    const { f, alice } = await withContact();
    const agent = await makeKey(f.accountId, { guardrails: { require_approval: true } });
    const plain = await makeKey(f.accountId);
    const later = async (key: string) => accepted(await gql(key, SEND, { input: { from: f.line.handle, to: alice, text: "later", sendAt: Date.now() + 3_600_000 } }));
    const owners = (await later(f.key)).id;
    const own = (await later(agent)).id;
    const ids = async (key: string, vars: Record<string, unknown>) => dataOf(await gql(key, LIST, vars), "outbox").edges.map((e: { node: { id: string } }) => e.node.id);
    for (const vars of [{}, { from: f.line.handle }, { status: "pending" }]) {
      expect(await ids(agent, vars)).toEqual([own]);
      expect(await ids(plain, vars)).toEqual([own, owners]);
    }
    const step = Date.now() + 60_000;
    for (const res of [await gql(agent, OUTBOX_ITEM, { id: owners }), await gql(agent, CANCEL, { id: owners }), await gql(agent, RESCHEDULE, { id: owners, sendAt: step })]) {
      expect(errorOf(res)).toMatchObject({ code: "outbox_item_not_found", param: "id" });
    }
    expect(await (await db()).outboxItem.findUniqueOrThrow({ where: { id: owners } })).toMatchObject({ status: "held", error: null });
    expect(dataOf(await gql(agent, RESCHEDULE, { id: own, sendAt: step }), "rescheduleOutboxItem")).toMatchObject({ id: own, holdReason: "approval" });
    expect(dataOf(await gql(agent, CANCEL, { id: own }), "cancelOutboxItem")).toMatchObject({ id: own, status: "failed", error: "canceled" });
    expect(dataOf(await gql(plain, CANCEL, { id: owners }), "cancelOutboxItem")).toMatchObject({ status: "failed", error: "canceled" });
  });

  it("outboxItemUpdated streams a guarded key's own sends only", async () => {
    const { f, alice } = await withContact();
    const agent = await makeKey(f.accountId, { guardrails: { max_sends_per_day: 100 } });
    const stream = await subscribe(agent, UPDATES);
    try {
      accepted(await gql(f.key, SEND, { input: { from: f.line.handle, to: alice, text: "the owner's" } }));
      const own = accepted(await gql(agent, SEND, { input: { from: f.line.handle, to: alice, text: "the agent's" } }));
      // The owner's send went first (pending, then sent): the agent's first event is its own.
      expect((await stream.next()).data?.data?.outboxItemUpdated).toEqual({ status: "pending", outboxId: own.id, item: { id: own.id } });
    } finally {
      await stream.close();
    }
  });
});

describe("GraphQL: human takeover", () => {
  it("pauseChat and resumeChat answer the Chat with pausedAt (Unix ms) and pausedBy; queries show them; resume lets the agent back", async () => {
    const { f, alice, chat } = await withContact();
    const agent = await makeKey(f.accountId, { guardrails: { allow_to: [alice] } });
    const owner = await ownerActor(f);
    const start = Date.now();
    const paused = dataOf(await asOwner(f, PAUSE, { id: chat.id }), "pauseChat");
    expect(paused).toEqual({ id: chat.id, identifier: alice, pausedAt: expect.any(Number), pausedBy: owner.userId });
    expect(paused.pausedAt).toBeGreaterThanOrEqual(start - 1000);
    expect(paused.pausedAt).toBeLessThanOrEqual(Date.now());
    // Pausing again (by a key this time) keeps who paused it first and since when.
    expect(dataOf(await gql(f.key, PAUSE, { id: chat.id }), "pauseChat")).toEqual(paused);
    const read = await gql(f.key, `query($from: String!, $to: String!) { chat(from: $from, to: $to) { ${CHAT_FIELDS} } chats(from: $from) { edges { node { id pausedAt } } } }`, {
      from: f.line.handle,
      to: alice,
    });
    expect(dataOf(read, "chat")).toEqual(paused);
    expect(read.body.data.chats.edges).toContainEqual({ node: { id: chat.id, pausedAt: paused.pausedAt } });
    expect(errorOf(await gql(agent, SEND, { input: { from: f.line.handle, to: alice, text: "during" } }))).toMatchObject({ code: "chat_paused" });

    const resumed = dataOf(await gql(f.key, RESUME, { id: chat.id }), "resumeChat");
    expect(resumed).toEqual({ id: chat.id, identifier: alice, pausedAt: null, pausedBy: null });
    accepted(await gql(agent, SEND, { input: { from: f.line.handle, to: alice, text: "after" } }));

    // A key pausing is named by its key_ ID.
    expect(dataOf(await gql(f.key, PAUSE, { id: chat.id }), "pauseChat")).toMatchObject({ pausedBy: expect.stringMatching(/^key_/) });
  });

  it("needs outbox:approve: an agent cannot lift the pause it is under; unknown, foreign and malformed chats are refused", async () => {
    const { f, chat } = await withContact();
    const agent = await makeKey(f.accountId, { guardrails: { max_sends_per_day: 10 } });
    const reader = await makeKey(f.accountId, { scopes: ["chats:read", "messages:write"] });
    dataOf(await gql(f.key, PAUSE, { id: chat.id }), "pauseChat");
    for (const key of [agent, reader]) {
      expect(errorOf(await gql(key, RESUME, { id: chat.id }))).toMatchObject({ code: "insufficient_scope" });
      expect(errorOf(await gql(key, PAUSE, { id: chat.id }))).toMatchObject({ code: "insufficient_scope" });
    }
    expect((await (await db()).chat.findUniqueOrThrow({ where: { id: chat.id } })).pausedAt).not.toBeNull();
    const other = await makeAccount();
    expect(errorOf(await gql(other.key, RESUME, { id: chat.id }))).toMatchObject({ code: "chat_not_found", param: "id" });
    expect(errorOf(await gql(f.key, PAUSE, { id: "cht_01unknownunknownunknown00" }))).toMatchObject({ code: "chat_not_found", param: "id" });
    expect(errorOf(await gql(f.key, PAUSE, { id: "obx_01notachatnotachatnotach" }))).toMatchObject({ code: "invalid_parameter_value", param: "id" });
  });
});

describe("GraphQL: API keys and their guardrails (owner only)", () => {
  it("the owner lists keys with their guardrails, every field whether set or not", async () => {
    const f = await makeAccount();
    const alice = phone();
    await makeKey(f.accountId, { guardrails: { allow_to: [alice], max_sends_per_day: 20 } });
    const keys = dataOf(await asOwner(f, API_KEYS), "apiKeys");
    expect(keys).toEqual([
      {
        id: expect.stringMatching(/^key_/),
        name: "agent",
        status: "active",
        scopes: expect.not.arrayContaining(["outbox:approve"]),
        guardrails: { allowTo: [alice], requireApproval: false, maxSendsPerChatWithoutReply: null, maxSendsPerDay: 20 },
      },
      {
        id: expect.stringMatching(/^key_/),
        name: "test",
        status: "active",
        scopes: expect.arrayContaining(["outbox:approve"]),
        guardrails: { allowTo: null, requireApproval: false, maxSendsPerChatWithoutReply: null, maxSendsPerDay: null },
      },
    ]);
    expect(JSON.stringify(await asOwner(f, `{ apiKeys { id name prefix } }`))).not.toContain(f.key);
  });

  it("setApiKeyGuardrails changes what is given, keeps what is left out, clears what is null; the key's sends follow at once", async () => {
    const { f, alice } = await withContact();
    const bob = phone();
    await inbound(f, bob);
    const agent = await makeKey(f.accountId, { guardrails: { max_sends_per_day: 5 } });
    const id = await lastKeyId(f);
    accepted(await gql(agent, SEND, { input: { from: f.line.handle, to: bob, text: "before" } }));

    // A formatted number is stored normalized, as sends are compared with it.
    const formatted = `+1 (${alice.slice(2, 5)}) ${alice.slice(5, 8)}-${alice.slice(8)}`;
    const set = dataOf(await asOwner(f, SET_GUARDRAILS, { id, guardrails: { allowTo: [formatted], maxSendsPerChatWithoutReply: 3 } }), "setApiKeyGuardrails");
    expect(set).toEqual({ id, guardrails: { allowTo: [alice], requireApproval: false, maxSendsPerChatWithoutReply: 3, maxSendsPerDay: 5 } });
    expect(errorOf(await gql(agent, SEND, { input: { from: f.line.handle, to: bob, text: "after" } }))).toMatchObject({ code: "recipient_not_allowed" });

    const cleared = dataOf(await asOwner(f, SET_GUARDRAILS, { id, guardrails: { allowTo: null, maxSendsPerDay: null, requireApproval: true } }), "setApiKeyGuardrails");
    expect(cleared.guardrails).toEqual({ allowTo: null, requireApproval: true, maxSendsPerChatWithoutReply: 3, maxSendsPerDay: null });
    expect(dataOf(await gql(agent, SEND, { input: { from: f.line.handle, to: bob, text: "now held" } }), "sendMessage")).toMatchObject({ holdReason: "approval" });
    expect(dataOf(await asOwner(f, API_KEYS), "apiKeys").find((k: { id: string }) => k.id === id).guardrails).toEqual(cleared.guardrails);
  });

  it("refuses bad values naming the field, a key holding outbox:approve, and keys it does not know", async () => {
    const f = await makeAccount();
    await makeKey(f.accountId, { guardrails: { max_sends_per_day: 5 } });
    const id = await lastKeyId(f);
    const set = (keyId: string, guardrails: Record<string, unknown>) => asOwner(f, SET_GUARDRAILS, { id: keyId, guardrails });
    expect(errorOf(await set(id, { maxSendsPerDay: 0 }))).toMatchObject({ code: "invalid_parameter_value", param: "guardrails.maxSendsPerDay" });
    expect(errorOf(await set(id, { allowTo: [] }))).toMatchObject({ code: "invalid_parameter_value", param: "guardrails.allowTo" });
    // f.key holds every scope, outbox:approve included: it cannot be given guardrails.
    const supervisor = (await (await db()).apiKey.findFirstOrThrow({ where: { accountId: f.accountId, name: "test" } })).id;
    expect(errorOf(await set(supervisor, { requireApproval: true }))).toMatchObject({ code: "invalid_parameter_value", param: "scopes" });
    expect(errorOf(await set("key_01unknownunknownunknown00", { requireApproval: true }))).toMatchObject({ code: "api_key_not_found", param: "id" });
    const other = await makeAccount();
    expect(errorOf(await asOwner(other, SET_GUARDRAILS, { id, guardrails: { maxSendsPerDay: null } }))).toMatchObject({ code: "api_key_not_found", param: "id" });
    const row = await (await db()).apiKey.findUniqueOrThrow({ where: { id } });
    expect(row).toMatchObject({ maxSendsPerDay: 5, requireApproval: false, allowTo: [] });
  });

  it("an API key can neither read nor change guardrails, its own or another's, whatever its scopes: session_required", async () => {
    const f = await makeAccount();
    const agent = await makeKey(f.accountId, { guardrails: { allow_to: [phone()], max_sends_per_day: 3 } });
    const id = await lastKeyId(f);
    for (const key of [agent, f.key]) {
      const listed = await gql(key, API_KEYS);
      expect(errorOf(listed)).toMatchObject({ code: "session_required", type: "authentication_error" });
      expect(listed.body.data).toBeNull();
      expect(JSON.stringify(listed.body)).not.toContain("maxSendsPerDay\":3");
      const lifted = await gql(key, SET_GUARDRAILS, { id, guardrails: { allowTo: null, maxSendsPerDay: null } });
      expect(errorOf(lifted)).toMatchObject({ code: "session_required" });
      expect(lifted.body.data).toBeNull();
    }
    expect(await (await db()).apiKey.findUniqueOrThrow({ where: { id } })).toMatchObject({ maxSendsPerDay: 3, allowTo: [expect.any(String)] });
  });
});

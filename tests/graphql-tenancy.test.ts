import { beforeEach, describe, expect, it, vi } from "vitest";
import type { Actor } from "@/server/services/access/actor";
import { sessionActorFor } from "@/server/services/access/session";
import { createLine } from "@/server/services/lines/lines";
import { createPool } from "@/server/services/pools/pools";
import { call, db, gql, inbound, makeAccount, makeKey, phone, post, subscribe, type Fixture } from "./helpers";

// Every query, mutation and subscription field, tried by account B with account A's line
// handles and IDs: B gets not-found codes or empty lists, never A's data. The list of fields
// tried is compared with the schema, so a new field cannot skip this test.

const tried = { Query: new Set<string>(), Mutation: new Set<string>(), Subscription: new Set<string>() };

// Owner-only mutations refuse API keys; the signed-in owner of another account must not reach A's
// objects either. GraphQL reads the dashboard session through next-auth, which needs Next's
// request scope: the session is supplied here instead (as in graphql-security.test.ts).
const session = vi.hoisted(() => ({ actor: null as Actor | null }));
vi.mock("@/server/services/access/session", async (importOriginal) => ({
  ...(await importOriginal<typeof import("@/server/services/access/session")>()),
  sessionActor: async () => session.actor,
}));
const COOKIE = "next-auth.session-token=eyJhbGciOiJkaXIifQ.signed";
beforeEach(() => {
  session.actor = null;
});

/** Account A's objects, and words that must never reach B. */
async function accountA() {
  const a = await makeAccount();
  const alice = phone();
  const m = await inbound(a, alice, "private to A", { attachment: { filename: "secret.txt", mime_type: "text/plain", content_base64: "c2VjcmV0" } });
  await post("/api/simulator/reactions", a.key, { line: a.line.handle, from: alice, message_id: m.id, type: "like", added: true });
  await post("/api/simulator/typing", a.key, { line: a.line.handle, from: alice, is_typing: true });
  await post("/api/simulator/receipts", a.key, { line: a.line.handle, from: alice });
  const obx = (await post("/v1/messages", a.key, { from: a.line.handle, to: alice, text: "A's reply" })).body.id as string;
  const webhook = await post("/v1/webhooks", a.key, { from: a.line.handle, url: "http://127.0.0.1:9/a", events: ["message.received"] });
  await inbound(a, alice, "another for the webhook");
  const delivery = await (await db()).webhookDelivery.findFirstOrThrow({ where: { webhookId: webhook.body.id } });
  const file = await call("POST", "/v1/files", { key: a.key, raw: new TextEncoder().encode("A's file"), headers: { "content-type": "text/plain" } });
  const pool = await createPool(a.accountId, { name: "A's pool", line_ids: [a.line.id] });
  const apiKey = (await (await db()).apiKey.findFirstOrThrow({ where: { accountId: a.accountId } })).id;
  return {
    a,
    alice,
    m,
    obx,
    webhook: webhook.body as { id: string; secret: string },
    delivery: delivery.id,
    file: file.body.id as string,
    pool: pool.id,
    apiKey,
    secrets: [a.line.id, m.id, m.chat_id, m.guid, obx, webhook.body.id, delivery.id, file.body.id, pool.id, apiKey, "private to A", "secret.txt", "A's reply", "A's pool"],
  };
}

type A = Awaited<ReturnType<typeof accountA>>;

/** Runs an operation as `key` (or as the signed-in owner of an account), records the root field, and checks that nothing of A's is in `data`. */
async function attempt(kind: keyof typeof tried, field: string, key: string | { session: Fixture }, operation: string, variables: Record<string, unknown>, a: A) {
  tried[kind].add(field);
  session.actor = typeof key === "string" ? null : sessionActorFor(key.session.accountId);
  const res = typeof key === "string" ? await gql(key, operation, variables) : await gql(null, operation, variables, { cookie: COOKIE });
  const data = JSON.stringify(res.body.data ?? null);
  for (const secret of a.secrets) expect(data, `${field} leaked ${secret}`).not.toContain(secret);
  return res;
}

const codeOf = (res: { body: { errors?: { extensions: Record<string, unknown> }[] } }) => res.body.errors?.[0]?.extensions.code;

describe("GraphQL tenancy: account B never reads or changes account A's objects", () => {
  it("every query field answers not-found or nothing for A's lines and IDs", async () => {
    const a = await accountA();
    const b: Fixture = await makeAccount();
    const bob = phone();
    await inbound(b, bob, "b's own contact");
    const from = a.a.line.handle;
    const cases: [string, string, Record<string, unknown>, string | null][] = [
      ["lines", `{ lines { edges { node { id chats(first: 10) { edges { node { id messages(first: 10) { edges { node { id } } } } } } } } } }`, {}, null],
      ["chats", `query($from: String!) { chats(from: $from) { edges { node { id } } } }`, { from }, "line_not_found"],
      ["chat", `query($from: String!, $to: String!) { chat(from: $from, to: $to) { id } }`, { from, to: a.alice }, "line_not_found"],
      ["chat", `query($from: String!, $to: String!) { chat(from: $from, to: $to) { id } }`, { from: b.line.handle, to: a.m.chat_id }, "chat_not_found"],
      ["messages", `query($from: String!) { messages(from: $from) { edges { node { id } } } }`, { from }, "line_not_found"],
      ["messages", `query($from: String!, $to: String) { messages(from: $from, to: $to) { edges { node { id } } } }`, { from: b.line.handle, to: a.m.chat_id }, "chat_not_found"],
      ["searchMessages", `query($q: String!) { searchMessages(query: $q) { messages { id text } } }`, { q: "private" }, null],
      ["searchMessages", `query($q: String!, $from: String) { searchMessages(query: $q, from: $from) { messages { id } } }`, { q: "private", from }, "line_not_found"],
      ["searchMessages", `query($q: String!, $to: String) { searchMessages(query: $q, to: $to) { messages { id } } }`, { q: "private", to: a.m.chat_id }, "chat_not_found"],
      [
        "searchMessages",
        `query($q: String!, $from: String, $to: String) { searchMessages(query: $q, from: $from, to: $to) { messages { id } } }`,
        { q: "private", from: b.line.handle, to: a.m.chat_id },
        "chat_not_found",
      ],
      ["message", `query($id: String!) { message(id: $id) { id } }`, { id: a.m.id }, "message_not_found"],
      ["message", `query($id: String!) { message(id: $id) { id } }`, { id: a.m.guid }, "message_not_found"],
      ["reactions", `query($id: String!) { reactions(messageId: $id) { edges { node { id } } } }`, { id: a.m.id }, "message_not_found"],
      ["typing", `query($from: String!, $to: String!) { typing(from: $from, to: $to) { edges { node { id } } } }`, { from, to: a.alice }, "line_not_found"],
      ["receipts", `query($from: String!, $to: String!) { receipts(from: $from, to: $to) { edges { node { id } } } }`, { from, to: a.alice }, "line_not_found"],
      ["outboxItem", `query($id: String!) { outboxItem(id: $id) { id } }`, { id: a.obx }, "outbox_item_not_found"],
      ["outbox", `{ outbox { edges { node { id } } } }`, {}, null],
      ["outbox", `query($from: String) { outbox(from: $from) { edges { node { id } } } }`, { from }, "line_not_found"],
      ["webhooks", `{ webhooks { edges { node { id } } } }`, {}, null],
      ["webhooks", `query($from: String) { webhooks(from: $from) { edges { node { id } } } }`, { from }, "line_not_found"],
      ["webhook", `query($id: String!) { webhook(id: $id) { id } }`, { id: a.webhook.id }, "webhook_not_found"],
      ["webhookDelivery", `query($id: String!) { webhookDelivery(id: $id) { id data } }`, { id: a.delivery }, "delivery_not_found"],
      ["file", `query($id: String!) { file(id: $id) { id url } }`, { id: a.file }, "file_not_found"],
      ["sandbox", `{ sandbox { status activationCode contactIdentifier } }`, {}, null],
      ["capacity", `query($from: String!) { capacity(from: $from) { lines { lineId } } }`, { from }, "line_not_found"],
      ["capacity", `query($from: String!) { capacity(from: $from) { lines { lineId } } }`, { from: a.a.line.id }, "line_not_found"],
      ["capacity", `query($from: String!) { capacity(from: $from) { lines { lineId } } }`, { from: a.pool }, "pool_not_found"],
      ["pools", `{ pools { id name lineIds lines { id } } }`, {}, null],
      // Owner-only: an API key is refused; B's signed-in owner sees B's keys alone (below).
      ["apiKeys", `{ apiKeys { id name guardrails { allowTo } } }`, {}, "session_required"],
    ];
    for (const [field, query, variables, code] of cases) {
      const res = await attempt("Query", field, b.key, query, variables, a);
      expect(codeOf(res), `${field} ${JSON.stringify(variables)}`).toBe(code ?? undefined);
    }
    const keys = await attempt("Query", "apiKeys", { session: b }, `{ apiKeys { id name } }`, {}, a);
    expect(keys.body.data.apiKeys).toEqual([{ id: expect.stringMatching(/^key_/), name: "test" }]);
    // The lists B sees are its own.
    const lists = await gql(b.key, `{ lines { edges { node { id } } } outbox { edges { node { id } } } webhooks { edges { node { id } } } }`);
    expect(lists.body.data.lines.edges.map((e: { node: { id: string } }) => e.node.id)).toContain(b.line.id);
    expect(lists.body.data.outbox.edges).toEqual([]);
    expect(lists.body.data.webhooks.edges).toEqual([]);
    expect((await gql(b.key, `{ pools { id } }`)).body.data.pools).toEqual([]);
    // A's pool named as B's capacity `from`: the error names the argument.
    const pool = await gql(b.key, `query($from: String!) { capacity(from: $from) { poolId } }`, { from: a.pool });
    expect(pool.body.errors[0].extensions).toMatchObject({ code: "pool_not_found", param: "from" });
  });

  it("every mutation refuses A's lines and IDs with not-found codes, and changes nothing of A's", async () => {
    const a = await accountA();
    const b = await makeAccount();
    const bob = phone();
    const bobsMessage = await inbound(b, bob, "b's own contact");
    const own = { from: b.line.handle, to: bob };
    const upload = (await gql(b.key, `mutation { uploadFile(input: { contentBase64: "YmJi" }) { id } }`)).body.data.uploadFile.id;
    const cases: [string, string, Record<string, unknown>, string][] = [
      ["sendMessage", "SendMessageInput", { from: a.a.line.handle, to: a.alice, text: "x" }, "line_not_found"],
      ["sendMessage", "SendMessageInput", { from: b.line.handle, to: a.m.chat_id, text: "x" }, "chat_not_found"],
      ["sendMessage", "SendMessageInput", { ...own, attachments: [a.file] }, "file_not_found"],
      ["sendMessage", "SendMessageInput", { ...own, text: "x", replyTo: a.m.id }, "message_not_found"],
      ["sendAudioMessage", "SendAudioMessageInput", { ...own, audioMessage: a.file }, "file_not_found"],
      ["sendAudioMessage", "SendAudioMessageInput", { from: a.a.line.handle, to: a.alice, audioMessage: upload }, "line_not_found"],
      ["sendReaction", "SendReactionInput", { ...own, messageId: a.m.id, type: "like" }, "message_not_found"],
      ["sendReaction", "SendReactionInput", { from: a.a.line.handle, to: a.alice, messageId: bobsMessage.id, type: "like" }, "line_not_found"],
      ["sendTyping", "SendTypingInput", { from: a.a.line.handle, to: a.alice }, "line_not_found"],
      ["sendReceipt", "SendReceiptInput", { from: a.a.line.handle, to: a.alice }, "line_not_found"],
      ["createWebhook", "CreateWebhookInput", { from: a.a.line.handle, url: "http://127.0.0.1:9/b", events: ["message.received"] }, "line_not_found"],
      ["deleteWebhook", "WebhookIdInput", { id: a.webhook.id }, "webhook_not_found"],
      ["rotateWebhookSecret", "WebhookIdInput", { id: a.webhook.id }, "webhook_not_found"],
      ["disableWebhook", "WebhookIdInput", { id: a.webhook.id }, "webhook_not_found"],
      ["enableWebhook", "WebhookIdInput", { id: a.webhook.id }, "webhook_not_found"],
      ["resendWebhookDelivery", "ResendWebhookDeliveryInput", { id: a.delivery }, "delivery_not_found"],
      ["resendWebhookDelivery", "ResendWebhookDeliveryInput", { webhookId: a.webhook.id, since: 0 }, "webhook_not_found"],
      // Owner-only: an API key is refused before any line is looked up (a session gets line_not_found: line-connect-ui.test.ts).
      ["connectLine", "ConnectLineInput", { lineId: a.a.line.id, provider: "simulated" }, "session_required"],
    ];
    for (const [field, inputType, input, code] of cases) {
      const res = await attempt("Mutation", field, b.key, `mutation($input: ${inputType}!) { ${field}(input: $input) { __typename } }`, { input }, a);
      expect(codeOf(res), `${field} ${JSON.stringify(input)}`).toBe(code);
    }
    const tested = await attempt("Mutation", "testLineConnection", b.key, `mutation($id: String!) { testLineConnection(lineId: $id) { ok } }`, { id: a.a.line.id }, a);
    expect(codeOf(tested)).toBe("session_required");

    // Mutations with plain arguments. Owner-only ones (pools, send policy) refuse B's API key
    // before anything is looked up, and B's signed-in owner gets not-found for A's objects.
    const CANCEL = `mutation($id: String!) { cancelOutboxItem(id: $id) { id status } }`;
    const RESCHEDULE = `mutation($id: String!, $at: Timestamp!) { rescheduleOutboxItem(id: $id, sendAt: $at) { id status } }`;
    const CREATE_POOL = `mutation($name: String!, $lineIds: [String!]!) { createPool(name: $name, lineIds: $lineIds) { id lineIds } }`;
    const ADD = `mutation($poolId: String!, $lineId: String!) { addPoolLine(poolId: $poolId, lineId: $lineId) { id lineIds } }`;
    const REMOVE = `mutation($poolId: String!, $lineId: String!) { removePoolLine(poolId: $poolId, lineId: $lineId) { id lineIds } }`;
    const DELETE = `mutation($id: String!) { deletePool(id: $id) { id } }`;
    const POLICY = `mutation($lineId: String!, $policy: SendPolicyInput!) { setLineSendPolicy(lineId: $lineId, policy: $policy) { id sendPolicy { contactFirst } } }`;
    const REVIEW = (field: string) => `mutation($id: String!) { ${field}(id: $id) { id status } }`;
    const TAKEOVER = (field: string) => `mutation($id: String!) { ${field}(id: $id) { id pausedAt } }`;
    const GUARDRAILS = `mutation($id: String!, $g: ApiKeyGuardrailsInput!) { setApiKeyGuardrails(id: $id, guardrails: $g) { id guardrails { maxSendsPerDay } } }`;
    const bPool = (await createPool(b.accountId, { name: "B's pool", line_ids: [b.line.id] })).id;
    const later = Date.now() + 3_600_000;
    const plain: [string, string | { session: Fixture }, string, Record<string, unknown>, string, string?][] = [
      ["cancelOutboxItem", b.key, CANCEL, { id: a.obx }, "outbox_item_not_found", "id"],
      ["rescheduleOutboxItem", b.key, RESCHEDULE, { id: a.obx, at: later }, "outbox_item_not_found", "id"],
      ["createPool", b.key, CREATE_POOL, { name: "mine", lineIds: [b.line.id] }, "session_required"],
      ["createPool", { session: b }, CREATE_POOL, { name: "with A's line", lineIds: [a.a.line.id] }, "invalid_parameter_value", "lineIds"],
      ["addPoolLine", b.key, ADD, { poolId: bPool, lineId: b.line.id }, "session_required"],
      ["addPoolLine", { session: b }, ADD, { poolId: a.pool, lineId: b.line.id }, "pool_not_found", "poolId"],
      ["addPoolLine", { session: b }, ADD, { poolId: bPool, lineId: a.a.line.id }, "invalid_parameter_value", "lineId"],
      ["removePoolLine", b.key, REMOVE, { poolId: bPool, lineId: b.line.id }, "session_required"],
      ["removePoolLine", { session: b }, REMOVE, { poolId: a.pool, lineId: a.a.line.id }, "pool_not_found", "poolId"],
      ["deletePool", b.key, DELETE, { id: bPool }, "session_required"],
      ["deletePool", { session: b }, DELETE, { id: a.pool }, "pool_not_found", "id"],
      ["setLineSendPolicy", b.key, POLICY, { lineId: b.line.id, policy: { contactFirst: false } }, "session_required"],
      ["setLineSendPolicy", { session: b }, POLICY, { lineId: a.a.line.id, policy: { contactFirst: false } }, "line_not_found", "lineId"],
      ["approveOutboxItem", b.key, REVIEW("approveOutboxItem"), { id: a.obx }, "outbox_item_not_found", "id"],
      ["rejectOutboxItem", { session: b }, REVIEW("rejectOutboxItem"), { id: a.obx }, "outbox_item_not_found", "id"],
      ["pauseChat", b.key, TAKEOVER("pauseChat"), { id: a.m.chat_id }, "chat_not_found", "id"],
      ["resumeChat", { session: b }, TAKEOVER("resumeChat"), { id: a.m.chat_id }, "chat_not_found", "id"],
      ["setApiKeyGuardrails", b.key, GUARDRAILS, { id: a.apiKey, g: { maxSendsPerDay: 1 } }, "session_required"],
      ["setApiKeyGuardrails", { session: b }, GUARDRAILS, { id: a.apiKey, g: { maxSendsPerDay: 1 } }, "api_key_not_found", "id"],
    ];
    for (const [field, as, operation, variables, code, param] of plain) {
      const res = await attempt("Mutation", field, as, operation, variables, a);
      const label = `${field} ${typeof as === "string" ? "key" : "session"} ${JSON.stringify(variables)}`;
      expect(codeOf(res), label).toBe(code);
      if (param) expect(res.body.errors[0].extensions.param, label).toBe(param);
    }
    // Mutations without references to other objects act on B's own account only.
    tried.Mutation.add("uploadFile");
    expect(codeOf(await gql(a.a.key, `query($id: String!) { file(id: $id) { id } }`, { id: upload }))).toBe("file_not_found");
    const sandbox = await attempt("Mutation", "activateSandbox", b.key, `mutation { activateSandbox { activationCode } }`, {}, a);
    const aSandbox = await gql(a.a.key, `mutation { activateSandbox { activationCode } }`);
    expect(sandbox.body.data.activateSandbox.activationCode).not.toBe(aSandbox.body.data.activateSandbox.activationCode);

    const prisma = await db();
    expect(await prisma.webhook.findUniqueOrThrow({ where: { id: a.webhook.id } })).toMatchObject({ isActive: true, secret: a.webhook.secret });
    expect(await prisma.outboxItem.findUniqueOrThrow({ where: { id: a.obx } })).toMatchObject({ canceledAt: null, holdReason: null });
    expect((await prisma.line.findUniqueOrThrow({ where: { id: a.a.line.id } })).sendPolicy).toEqual({});
    expect(await prisma.chat.findUniqueOrThrow({ where: { id: a.m.chat_id } })).toMatchObject({ pausedAt: null, pausedBy: null });
    expect(await prisma.apiKey.findUniqueOrThrow({ where: { id: a.apiKey } })).toMatchObject({ maxSendsPerDay: null });
    const aPool = await prisma.pool.findUniqueOrThrow({ where: { id: a.pool }, include: { lines: true } });
    expect(aPool.lines.map((l) => l.lineId)).toEqual([a.a.line.id]);
    expect((await prisma.pool.findUniqueOrThrow({ where: { id: bPool }, include: { lines: true } })).lines.map((l) => l.lineId)).toEqual([b.line.id]);
    expect(await prisma.outboxItem.count({ where: { accountId: b.accountId } })).toBe(0);
  });

  it("subscriptions refuse A's lines and items", async () => {
    const a = await accountA();
    const b = await makeAccount();
    tried.Subscription.add("messageReceived");
    const messages = await subscribe(b.key, `subscription($from: String) { messageReceived(from: $from) { id } }`, { from: a.a.line.handle });
    expect(codeOf({ body: (await messages.next()).data! })).toBe("line_not_found");
    tried.Subscription.add("outboxItemUpdated");
    const outbox = await subscribe(b.key, `subscription($id: String) { outboxItemUpdated(id: $id) { status } }`, { id: a.obx });
    expect(codeOf({ body: (await outbox.next()).data! })).toBe("outbox_item_not_found");
    tried.Subscription.add("chatActivity");
    const activity = await subscribe(b.key, `subscription($from: String) { chatActivity(from: $from) { kind } }`, { from: a.a.line.handle });
    expect(codeOf({ body: (await activity.next()).data! })).toBe("line_not_found");
    // That an unfiltered subscription never carries another account's events: graphql-subscriptions.test.ts.
  });

  it("a line-restricted key sees only its lines (and the sandbox), nested or not", async () => {
    const a = await makeAccount();
    const second = await createLine({ accountId: a.accountId, handle: phone(), advancedFeatures: true });
    const [alice, bob] = [phone(), phone()];
    await inbound(a, alice, "on the first line");
    const hidden = await post("/api/simulator/messages", a.key, { line: second.handle, from: bob, text: "on the second line" });
    await post("/v1/messages", a.key, { from: second.handle, to: bob, text: "from the second line" });
    await post("/v1/webhooks", a.key, { from: second.handle, url: "http://127.0.0.1:9/second", events: ["message.received"] });
    const restricted = await makeKey(a.accountId, { lineIds: [a.line.id] });
    const res = await gql(restricted, `{ lines { edges { node { id chats { edges { node { id } } } } } } outbox { edges { node { id } } } webhooks { edges { node { id } } } }`);
    expect(res.body.errors).toBeUndefined();
    const seen = JSON.stringify(res.body.data);
    expect(seen).not.toContain(second.id);
    expect(seen).not.toContain(hidden.body.chat_id);
    expect(res.body.data.outbox.edges).toEqual([]);
    expect(res.body.data.webhooks.edges).toEqual([]);
    expect(codeOf(await gql(restricted, `query($id: String!) { message(id: $id) { id } }`, { id: hidden.body.id }))).toBe("line_not_accessible");
    expect(codeOf(await gql(restricted, `query($from: String!) { messages(from: $from) { edges { node { id } } } }`, { from: second.handle }))).toBe(
      "line_not_accessible",
    );

    // Capacity, pools and the changes of an outbox item of the other line.
    const onSecond = (await post("/v1/messages", a.key, { from: second.handle, to: bob, text: "later", send_at: Date.now() + 3_600_000 })).body.id as string;
    const secondOnly = await createPool(a.accountId, { name: "second only", line_ids: [second.id] });
    const both = await createPool(a.accountId, { name: "both", line_ids: [a.line.id, second.id] });
    const CAPACITY = `query($from: String!) { capacity(from: $from) { lines { lineId } } }`;
    expect(codeOf(await gql(restricted, CAPACITY, { from: second.handle }))).toBe("line_not_accessible");
    expect(codeOf(await gql(restricted, CAPACITY, { from: secondOnly.id }))).toBe("line_not_accessible");
    expect((await gql(restricted, CAPACITY, { from: both.id })).body.data.capacity.lines).toEqual([{ lineId: a.line.id }]);
    const pools = await gql(restricted, `{ pools { id lineIds lines { id } } }`);
    expect(pools.body.data.pools).toEqual([{ id: both.id, lineIds: [a.line.id], lines: [{ id: a.line.id }] }]);
    const cancel = await gql(restricted, `mutation($id: String!) { cancelOutboxItem(id: $id) { id } }`, { id: onSecond });
    expect(codeOf(cancel)).toBe("line_not_accessible");
    const reschedule = await gql(restricted, `mutation($id: String!, $at: Timestamp!) { rescheduleOutboxItem(id: $id, sendAt: $at) { id } }`, {
      id: onSecond,
      at: Date.now() + 7_200_000,
    });
    expect(codeOf(reschedule)).toBe("line_not_accessible");
    expect(await (await db()).outboxItem.findUniqueOrThrow({ where: { id: onSecond } })).toMatchObject({ status: "held", canceledAt: null });
  });

  it("covers every root field of the schema", async () => {
    const { schema } = await import("@/server/transports/graphql/schema");
    const names = (type: { getFields(): Record<string, unknown> } | null | undefined) => Object.keys(type?.getFields() ?? {}).sort();
    expect([...tried.Query].sort()).toEqual(names(schema.getQueryType()));
    expect([...tried.Mutation].sort()).toEqual(names(schema.getMutationType()));
    expect([...tried.Subscription].sort()).toEqual(names(schema.getSubscriptionType()));
  });
});

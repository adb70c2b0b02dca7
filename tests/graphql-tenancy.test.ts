import { describe, expect, it } from "vitest";
import { createLine } from "@/server/services/lines/lines";
import { call, db, gql, inbound, makeAccount, makeKey, phone, post, subscribe, type Fixture } from "./helpers";

// Every query, mutation and subscription field, tried by account B with account A's line
// handles and IDs: B gets not-found codes or empty lists, never A's data. The list of fields
// tried is compared with the schema, so a new field cannot skip this test.

const tried = { Query: new Set<string>(), Mutation: new Set<string>(), Subscription: new Set<string>() };

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
  return {
    a,
    alice,
    m,
    obx,
    webhook: webhook.body as { id: string; secret: string },
    delivery: delivery.id,
    file: file.body.id as string,
    secrets: [a.line.id, m.id, m.chat_id, m.guid, obx, webhook.body.id, delivery.id, file.body.id, "private to A", "secret.txt", "A's reply"],
  };
}

type A = Awaited<ReturnType<typeof accountA>>;

/** Runs an operation as `key`, records the root field, and checks that nothing of A's is in `data`. */
async function attempt(kind: keyof typeof tried, field: string, key: string, operation: string, variables: Record<string, unknown>, a: A) {
  tried[kind].add(field);
  const res = await gql(key, operation, variables);
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
    ];
    for (const [field, query, variables, code] of cases) {
      const res = await attempt("Query", field, b.key, query, variables, a);
      expect(codeOf(res), `${field} ${JSON.stringify(variables)}`).toBe(code ?? undefined);
    }
    // The lists B sees are its own.
    const lists = await gql(b.key, `{ lines { edges { node { id } } } outbox { edges { node { id } } } webhooks { edges { node { id } } } }`);
    expect(lists.body.data.lines.edges.map((e: { node: { id: string } }) => e.node.id)).toContain(b.line.id);
    expect(lists.body.data.outbox.edges).toEqual([]);
    expect(lists.body.data.webhooks.edges).toEqual([]);
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
    // Mutations without references to other objects act on B's own account only.
    tried.Mutation.add("uploadFile");
    expect(codeOf(await gql(a.a.key, `query($id: String!) { file(id: $id) { id } }`, { id: upload }))).toBe("file_not_found");
    const sandbox = await attempt("Mutation", "activateSandbox", b.key, `mutation { activateSandbox { activationCode } }`, {}, a);
    const aSandbox = await gql(a.a.key, `mutation { activateSandbox { activationCode } }`);
    expect(sandbox.body.data.activateSandbox.activationCode).not.toBe(aSandbox.body.data.activateSandbox.activationCode);

    const prisma = await db();
    expect(await prisma.webhook.findUniqueOrThrow({ where: { id: a.webhook.id } })).toMatchObject({ isActive: true, secret: a.webhook.secret });
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
  });

  it("covers every root field of the schema", async () => {
    const { schema } = await import("@/server/transports/graphql/schema");
    const names = (type: { getFields(): Record<string, unknown> } | null | undefined) => Object.keys(type?.getFields() ?? {}).sort();
    expect([...tried.Query].sort()).toEqual(names(schema.getQueryType()));
    expect([...tried.Mutation].sort()).toEqual(names(schema.getMutationType()));
    expect([...tried.Subscription].sort()).toEqual(names(schema.getSubscriptionType()));
  });
});

import { readFileSync } from "node:fs";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { resetConfig } from "@/server/kernel/config";
import { newId } from "@/server/kernel/ids";
import { call, db, get, gql, inbound, makeAccount, makeKey, phone, post, recordQueries, type ApiResult } from "./helpers";
import { captureLog } from "./log-capture";

const q = encodeURIComponent;

function expectGraphQLError(res: ApiResult, code: string, extra: Record<string, unknown> = {}) {
  const error = res.body.errors?.[0];
  expect(error, JSON.stringify(res.body)).toBeDefined();
  expect(error.extensions).toMatchObject({ code, request_id: res.headers.get("request-id"), ...extra });
  expect(error.extensions.request_id).toMatch(/^req_/);
  return error as { message: string; path?: string[]; extensions: Record<string, unknown> };
}

describe("GraphQL: authentication, scopes and rate limit, as /v1", () => {
  it("answers 401 missing_api_key / invalid_api_key before looking at the operation", async () => {
    const none = await gql(null, "{ lines { edges { node { id } } } }");
    expect(none.status).toBe(401);
    expectGraphQLError(none, "missing_api_key", { type: "authentication_error" });
    expect(none.body.data).toBeUndefined();

    const malformed = await gql("not-a-key", "{ lines { edges { node { id } } } }");
    expect(malformed.status).toBe(401);
    expectGraphQLError(malformed, "invalid_api_key");
    const unknown = await gql(`sk_live_${"x".repeat(32)}`, "{ lines { edges { node { id } } } }");
    expect(unknown.status).toBe(401);
    expectGraphQLError(unknown, "invalid_api_key");

    // An unauthenticated client learns nothing about the schema, not even that a field is unknown.
    const invalid = await gql(null, "{ noSuchField }");
    expect(invalid.status).toBe(401);
    expectGraphQLError(invalid, "missing_api_key");
  });

  it("checks each field's scope: a field without it fails with insufficient_scope, the others answer", async () => {
    const f = await makeAccount();
    const key = await makeKey(f.accountId, { scopes: ["chats:read"] });
    await inbound(f, phone(), "hi");
    const res = await gql(key, `query($from: String!) { lines { edges { node { id } } } chats(from: $from) { edges { node { id } } } }`, {
      from: f.line.handle,
    });
    expect(res.status).toBe(200);
    const error = expectGraphQLError(res, "insufficient_scope", { type: "authorization_error" });
    expect(error.path).toEqual(["lines"]);
    expect(res.body.data).toBeNull(); // lines is non-null, so the error reaches the root
    const chatsOnly = await gql(key, `query($from: String!) { chats(from: $from) { edges { node { id messages { edges { node { id } } } } } } }`, {
      from: f.line.handle,
    });
    expectGraphQLError(chatsOnly, "insufficient_scope");
    expect(chatsOnly.body.errors[0].message).toContain("messages:read");
  });

  it("counts every request against the key's hourly limit and answers 429 with Retry-After", async () => {
    const f = await makeAccount();
    const key = await makeKey(f.accountId, { rateLimitPerHour: 1 });
    const first = await gql(key, "{ sandbox { status } }");
    expect(first.status).toBe(200);
    expect(first.headers.get("x-ratelimit-limit")).toBe("1");
    expect(first.headers.get("x-ratelimit-remaining")).toBe("0");
    const second = await gql(key, "{ sandbox { status } }");
    expect(second.status).toBe(429);
    expectGraphQLError(second, "rate_limit_exceeded", { type: "rate_limit_error" });
    expect(Number(second.headers.get("retry-after"))).toBeGreaterThan(0);
  });

  it("gives every response a request ID in the Request-Id header, and CORS like /v1", async () => {
    const f = await makeAccount();
    const res = await gql(f.key, "{ sandbox { status sandboxLineHandle } }");
    expect(res.status).toBe(200);
    expect(res.headers.get("request-id")).toMatch(/^req_/);
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    expect(res.body.data.sandbox).toEqual({ status: "missing", sandboxLineHandle: "+15555550100" });
    const preflight = await call("OPTIONS", "/api/graphql");
    expect(preflight.status).toBe(204);
    const byGet = await get(`/api/graphql?query=${q("{ sandbox { status } }")}`, f.key);
    expect(byGet.body).toEqual({ data: { sandbox: { status: "missing" } } });
    const mutationByGet = await get(`/api/graphql?query=${q("mutation { activateSandbox { status } }")}`, f.key);
    expect(mutationByGet.status).toBe(405);
  });
});

describe("GraphQL queries", () => {
  it("pages chats and messages with Relay cursors, newest first, values as in /v1", async () => {
    const f = await makeAccount();
    const contacts = [phone(), phone(), phone()];
    for (const c of contacts) await inbound(f, c, `hello from ${c}`);
    const alice = contacts[0]!;
    const more = [await inbound(f, alice, "second"), await inbound(f, alice, "third")];

    const page = (after?: string) =>
      gql(
        f.key,
        `query($from: String!, $after: String) {
          chats(from: $from, first: 2, after: $after) {
            pageInfo { hasNextPage endCursor }
            edges { cursor node { id identifier lastMessageAt } }
          }
        }`,
        { from: f.line.handle, after },
      );
    const one = await page();
    expect(one.body.errors).toBeUndefined();
    expect(one.body.data.chats.edges).toHaveLength(2);
    expect(one.body.data.chats.pageInfo.hasNextPage).toBe(true);
    const two = await page(one.body.data.chats.pageInfo.endCursor);
    expect(two.body.data.chats.edges).toHaveLength(1);
    expect(two.body.data.chats.pageInfo.hasNextPage).toBe(false);
    const graphIds = [...one.body.data.chats.edges, ...two.body.data.chats.edges].map((e: { node: { id: string } }) => e.node.id);
    const rest = await get(`/v1/chats?from=${q(f.line.handle)}`, f.key);
    expect(graphIds).toEqual(rest.body.data.map((c: { id: string }) => c.id));
    expect(one.body.data.chats.edges[0].node.lastMessageAt).toBe(rest.body.data[0].last_message_at);

    const messages = await gql(
      f.key,
      `query($from: String!, $to: String) { messages(from: $from, to: $to, first: 2) { pageInfo { hasNextPage } edges { node { id text sender isFromMe sentAt syncedAt chatId lineId guid } } } }`,
      { from: f.line.handle, to: alice },
    );
    expect(messages.body.data.messages.edges.map((e: { node: { text: string } }) => e.node.text)).toEqual(["third", "second"]);
    expect(messages.body.data.messages.pageInfo.hasNextPage).toBe(true);
    // The same pages nested under the chat.
    const nested = (after?: string) =>
      gql(
        f.key,
        `query($from: String!, $to: String!, $after: String) { chat(from: $from, to: $to) { messages(first: 2, after: $after) { pageInfo { hasNextPage endCursor } edges { node { text } } } } }`,
        { from: f.line.handle, to: alice, after },
      );
    const first = (await nested()).body.data.chat.messages;
    const rest2 = (await nested(first.pageInfo.endCursor)).body.data.chat.messages;
    expect([...first.edges, ...rest2.edges].map((e: { node: { text: string } }) => e.node.text)).toEqual(["third", "second", `hello from ${alice}`]);
    expect(rest2.pageInfo.hasNextPage).toBe(false);
    const restMessage = (await get(`/v1/messages?id=${more[1].id}`, f.key)).body;
    expect(messages.body.data.messages.edges[0].node).toEqual({
      id: restMessage.id,
      text: restMessage.text,
      sender: restMessage.sender,
      isFromMe: false,
      sentAt: restMessage.sent_at,
      syncedAt: restMessage.synced_at,
      chatId: restMessage.chat_id,
      lineId: restMessage.line_id,
      guid: restMessage.guid,
    });
  });

  it("reads one message by ID or GUID with attachments (signed URLs), its reply parent and reactions", async () => {
    const f = await makeAccount();
    const alice = phone();
    const parent = await inbound(f, alice, "the question");
    const reply = await inbound(f, alice, null as unknown as string, {
      reply_to_guid: parent.guid,
      attachment: { filename: "photo.png", mime_type: "image/png", content_base64: Buffer.from("png-bytes").toString("base64") },
    });
    await post("/api/simulator/reactions", f.key, { line: f.line.handle, from: alice, message_id: parent.id, type: "love", added: true });
    const query = `query($id: String!) { message(id: $id) {
      id text replyToGuid
      attachments { id fileId filename mimeType size url transcription }
      replyTo { id text reactions { edges { node { type sender isFromMe added messageId } } } }
      chat { identifier } line { handle }
    } }`;
    for (const id of [reply.id, reply.guid]) {
      const res = await gql(f.key, query, { id });
      expect(res.body.errors).toBeUndefined();
      const m = res.body.data.message;
      expect(m).toMatchObject({ id: reply.id, text: null, replyToGuid: parent.guid, chat: { identifier: alice }, line: { handle: f.line.handle } });
      expect(m.attachments).toEqual([
        {
          id: reply.attachments[0].id,
          fileId: reply.attachments[0].file_id,
          filename: "photo.png",
          mimeType: "image/png",
          size: 9,
          url: expect.stringMatching(/^http:\/\/localhost:3000\/api\/files\/file_\w+\?expires=\d+&signature=/),
          transcription: null,
        },
      ]);
      const download = await call("GET", new URL(m.attachments[0].url).pathname + new URL(m.attachments[0].url).search);
      expect(download.status).toBe(200);
      expect(m.replyTo).toEqual({
        id: parent.id,
        text: "the question",
        reactions: { edges: [{ node: { type: "love", sender: alice, isFromMe: false, added: true, messageId: parent.id } }] },
      });
    }
    const reactions = await gql(f.key, `query($m: String!) { reactions(messageId: $m) { edges { node { type } } } }`, { m: parent.guid });
    expect(reactions.body.data.reactions.edges).toEqual([{ node: { type: "love" } }]);
    const missing = await gql(f.key, `query($id: String!) { message(id: $id) { id } }`, { id: newId("message") });
    expectGraphQLError(missing, "message_not_found", { type: "not_found_error", param: "id" });
    expect(missing.body.data).toEqual({ message: null });
    const wrongPrefix = await gql(f.key, `query($id: String!) { message(id: $id) { id } }`, { id: newId("chat") });
    expectGraphQLError(wrongPrefix, "invalid_parameter_value", { param: "id" });
  });

  it("reads typing, receipts, a chat, the sandbox, lines and files", async () => {
    const f = await makeAccount();
    const alice = phone();
    await post("/api/simulator/typing", f.key, { line: f.line.handle, from: alice, is_typing: true });
    await post("/api/simulator/receipts", f.key, { line: f.line.handle, from: alice });
    const vars = { from: f.line.handle, to: alice };
    const res = await gql(
      f.key,
      `query($from: String!, $to: String!) {
        typing(from: $from, to: $to) { edges { node { handle isTyping updatedAt chatId } } }
        receipts(from: $from, to: $to) { edges { node { handle lastReadAt } } }
        chat(from: $from, to: $to) { identifier hasReceivedInbound typing { edges { node { isTyping } } } receipts { edges { node { handle } } } }
        lines { edges { node { id handle isSandbox advancedFeatures } } }
      }`,
      vars,
    );
    expect(res.body.errors).toBeUndefined();
    const restTyping = (await get(`/v1/typing?from=${q(f.line.handle)}&to=${q(alice)}`, f.key)).body.data[0];
    expect(res.body.data.typing.edges[0].node).toEqual({ handle: alice, isTyping: true, updatedAt: restTyping.updated_at, chatId: restTyping.chat_id });
    expect(res.body.data.receipts.edges[0].node.handle).toBe(alice);
    expect(res.body.data.chat).toEqual({
      identifier: alice,
      hasReceivedInbound: false,
      typing: { edges: [{ node: { isTyping: true } }] },
      receipts: { edges: [{ node: { handle: alice } }] },
    });
    const restLines = (await get("/v1/lines", f.key)).body.data;
    expect(res.body.data.lines.edges.map((e: { node: { id: string; isSandbox: boolean } }) => [e.node.id, e.node.isSandbox])).toEqual(
      restLines.map((l: { id: string; is_sandbox: boolean }) => [l.id, l.is_sandbox]),
    );
    expect(restLines.map((l: { id: string }) => l.id)).toContain(f.line.id);
    const upload = await call("POST", "/v1/files", { key: f.key, raw: new TextEncoder().encode("abc"), headers: { "content-type": "text/plain" } });
    const file = await gql(f.key, `query($id: String!) { file(id: $id) { id filename mimeType size url createdAt } }`, { id: upload.body.id });
    expect(file.body.data.file).toMatchObject({ id: upload.body.id, filename: "file.txt", mimeType: "text/plain", size: 3, createdAt: upload.body.created_at });
  });

  it("reads outbox items and webhooks with their deliveries and attempts", async () => {
    const f = await makeAccount();
    const alice = phone();
    await inbound(f, alice, "hi");
    const sent = await post("/v1/messages", f.key, { from: f.line.handle, to: alice, text: "queued" });
    const hook = await post("/v1/webhooks", f.key, { from: f.line.handle, url: "http://127.0.0.1:9/hook", events: ["message.received"] });
    await inbound(f, alice, "makes a delivery");
    const prisma = await db();
    const delivery = await prisma.webhookDelivery.findFirstOrThrow({ where: { webhookId: hook.body.id } });
    await prisma.webhookAttempt.create({
      data: { id: newId("attempt"), deliveryId: delivery.id, startedAt: new Date(), durationMs: 12, statusCode: 500, responseBody: "oops" },
    });
    const res = await gql(
      f.key,
      `query($obx: String!, $wh: String!, $dlv: String!) {
        outboxItem(id: $obx) { id kind status attempts maxAttempts error payload { chatId to isGroup ... on MessageOutboxPayload { text attachmentIds } } }
        outbox(status: pending) { edges { node { id } } }
        webhooks { edges { node { id url events isActive lineIds deliveries(first: 5) { edges { node { id event status } } } } } }
        webhook(id: $wh) { id line { handle } }
        webhookDelivery(id: $dlv) { id event data attemptLog { statusCode durationMs responseExcerpt error } }
      }`,
      { obx: sent.body.id, wh: hook.body.id, dlv: delivery.id },
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.outboxItem).toEqual({
      id: sent.body.id,
      kind: "message",
      status: "pending",
      attempts: 0,
      maxAttempts: 5,
      error: null,
      payload: { chatId: expect.stringMatching(/^cht_/), to: alice, isGroup: false, text: "queued", attachmentIds: [] },
    });
    expect(res.body.data.outbox.edges).toEqual([{ node: { id: sent.body.id } }]);
    expect(res.body.data.webhooks.edges).toEqual([
      {
        node: {
          id: hook.body.id,
          url: "http://127.0.0.1:9/hook",
          events: ["message.received"],
          isActive: true,
          lineIds: [f.line.id],
          deliveries: { edges: [{ node: { id: delivery.id, event: "message.received", status: "pending" } }] },
        },
      },
    ]);
    expect(res.body.data.webhook).toEqual({ id: hook.body.id, line: { handle: f.line.handle } });
    expect(JSON.parse(res.body.data.webhookDelivery.data)).toMatchObject({ text: "makes a delivery", line_handle: f.line.handle });
    expect(res.body.data.webhookDelivery.attemptLog).toEqual([{ statusCode: 500, durationMs: 12, responseExcerpt: "oops", error: null }]);
  });

  it("resolves chats -> messages -> attachments, reactions and reply parents in a constant number of queries", async () => {
    const f = await makeAccount();
    const seed = async (chats: number, perChat: number) => {
      for (let c = 0; c < chats; c++) {
        const who = phone();
        let previous: { id: string; guid: string } | null = null;
        for (let i = 0; i < perChat; i++) {
          const m: { id: string; guid: string } = await inbound(f, who, `message ${i}`, {
            ...(previous ? { reply_to_guid: previous.guid } : {}),
            attachment: { filename: `${i}.png`, mime_type: "image/png", content_base64: Buffer.from(`png ${i}`).toString("base64") },
          });
          await post("/api/simulator/reactions", f.key, { line: f.line.handle, from: who, message_id: m.id, type: "like", added: true });
          previous = m;
        }
      }
    };
    const query = `query($from: String!) { chats(from: $from, first: 20) { edges { node { id identifier
      messages(first: 10) { edges { node { id text attachments { filename url }
        reactions(first: 5) { edges { node { type sender } } }
        replyTo { id text attachments { url } } } } } } } } }`;
    const measure = async () => {
      await gql(f.key, query, { from: f.line.handle }); // warm the caches a request uses (key, line, URL signing secret)
      const { result, statements } = await recordQueries(() => gql(f.key, query, { from: f.line.handle }));
      expect(result.body.errors).toBeUndefined();
      // Authentication and the rate limit touch the database now and then; they are not the query's cost.
      return { result, statements: statements.filter((s) => !/"(RateCounter|ApiKey)"/.test(s)) };
    };
    await seed(2, 2);
    const small = await measure();
    await seed(6, 4);
    const large = await measure();
    const chats = large.result.body.data.chats.edges;
    expect(chats).toHaveLength(8);
    const deepest = chats.find((c: { node: { messages: { edges: unknown[] } } }) => c.node.messages.edges.length === 4).node.messages.edges;
    expect(deepest[0].node).toMatchObject({
      text: "message 3",
      attachments: [{ filename: "3.png", url: expect.any(String) }],
      reactions: { edges: [{ node: { type: "like" } }] },
      replyTo: { text: "message 2", attachments: [{ url: expect.any(String) }] },
    });
    expect(large.statements.length).toBe(small.statements.length);
    expect(large.statements.length).toBeLessThanOrEqual(4);
  });
});

describe("GraphQL errors and limits", () => {
  afterEach(() => vi.restoreAllMocks());

  it("masks unexpected errors but keeps the request ID, and logs the cause with it", async () => {
    const f = await makeAccount();
    const prisma = await db();
    const id = newId("outbox");
    // A payload the delivery schemas refuse: reading it fails inside the resolver.
    await prisma.outboxItem.create({ data: { id, accountId: f.accountId, lineId: f.line.id, kind: "message", payload: { broken: true }, requestId: "req_x" } });
    const { result: res, records } = await captureLog(() => gql(f.key, `query($id: String!) { outboxItem(id: $id) { id payload { chatId } } }`, { id }));
    expect(res.status).toBe(200);
    const error = expectGraphQLError(res, "internal_error", { type: "api_error" });
    expect(error.message).toBe("An unexpected error occurred. Quote the request_id when reporting it.");
    expect(JSON.stringify(res.body)).not.toMatch(/broken|ZodError|stack/);
    expect(res.body.data).toEqual({ outboxItem: null });
    const line = records.find((r) => r.request_id === res.headers.get("request-id")) as { level: number; msg: string; err: { message: string; stack: string } } | undefined;
    expect(line).toMatchObject({ level: 50, msg: "unexpected GraphQL error" });
    expect(line!.err.message).toMatch(/chat_id|invalid/i);
    expect(line!.err.stack).toContain("\n    at ");
  });

  it("rejects operations over the depth or cost limit before running any resolver", async () => {
    const f = await makeAccount();
    await inbound(f, phone(), "hi");
    let nested = "id";
    for (let i = 0; i < 16; i++) nested = `id replyTo { ${nested} }`;
    const deep = await recordQueries(() => gql(f.key, `query($id: String!) { message(id: $id) { ${nested} } }`, { id: newId("message") }));
    expectGraphQLError(deep.result, "query_too_complex", { type: "invalid_request_error" });
    expect(deep.result.body.errors[0].message).toMatch(/depth/);
    expect(deep.statements.filter((s) => s.includes('"Message"'))).toEqual([]);

    const costly = await recordQueries(() =>
      gql(
        f.key,
        `query($from: String!) { chats(from: $from, first: 100) { edges { node {
          messages(first: 100) { edges { node { id reactions(first: 100) { edges { node { type } } } } } } } } } }`,
        { from: f.line.handle },
      ),
    );
    expectGraphQLError(costly.result, "query_too_complex");
    expect(costly.result.body.errors[0].message).toMatch(/complexity/);
    expect(costly.statements.filter((s) => s.includes('"Chat"'))).toEqual([]);

    const tooBig = await call("POST", "/api/graphql", {
      key: f.key,
      raw: "{}",
      headers: { "content-type": "application/json", "content-length": String(64 * 1024 * 1024) },
    });
    expect(tooBig.status).toBe(413);
    expectGraphQLError(tooBig, "request_too_large", { type: "invalid_request_error" });
    expect(tooBig.body.errors[0].extensions.http).toBeUndefined();
  });

  it("names invalid arguments in the GraphQL spelling", async () => {
    const f = await makeAccount();
    const res = await gql(f.key, `{ messages(from: "  ") { edges { node { id } } } }`);
    expectGraphQLError(res, "invalid_parameter_value", { param: "from" });
    const negative = await gql(f.key, `query($from: String!) { chats(from: $from, first: -1) { edges { node { id } } } }`, { from: f.line.handle });
    expectGraphQLError(negative, "invalid_parameter_value");
    const cursor = await gql(f.key, `query($from: String!) { chats(from: $from, after: "bm90IGEgY3Vyc29y") { edges { node { id } } } }`, {
      from: f.line.handle,
    });
    expectGraphQLError(cursor, "invalid_parameter_value");
  });

  it("serves GraphiQL outside production only; introspection to authenticated callers in production too", async () => {
    const f = await makeAccount();
    const page = await call("GET", "/api/graphql", { headers: { accept: "text/html" } });
    expect(page.status).toBe(200);
    const introspection = await gql(f.key, "{ __schema { queryType { name } } }");
    expect(introspection.body.data.__schema.queryType.name).toBe("Query");

    const previous = process.env.NODE_ENV;
    Object.assign(process.env, { NODE_ENV: "production" });
    resetConfig();
    vi.resetModules();
    try {
      const { handleGraphQL } = await import("@/server/transports/graphql/yoga");
      const html = await handleGraphQL(new Request("http://localhost:3000/api/graphql", { headers: { accept: "text/html" } }));
      expect(html.headers.get("content-type") ?? "").not.toContain("text/html");
      const res = await handleGraphQL(
        new Request("http://localhost:3000/api/graphql", {
          method: "POST",
          headers: { authorization: `Bearer ${f.key}`, "content-type": "application/json" },
          body: JSON.stringify({ query: "{ __schema { queryType { name } } }" }),
        }),
      );
      const body = await res.json();
      // GRAPHQL_INTROSPECTION=authenticated (tests/graphql-security.test.ts covers every mode).
      expect(body.data.__schema.queryType.name).toBe("Query");
    } finally {
      Object.assign(process.env, { NODE_ENV: previous });
      resetConfig();
    }
  });

  it("schema.graphql is the printed schema (npm run graphql:schema)", async () => {
    const { printedSchema } = await import("@/server/transports/graphql/schema");
    const committed = readFileSync(path.resolve(import.meta.dirname, "../schema.graphql"), "utf8");
    expect(committed, "schema.graphql is out of date: run npm run graphql:schema").toBe(printedSchema());
  });
});

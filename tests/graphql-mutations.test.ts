import { describe, expect, it, vi } from "vitest";
import { startRunner, stopRunner } from "@/server/engine/outbox-runner";
import { newId } from "@/server/kernel/ids";
import { db, gql, inbound, makeAccount, makeKey, phone, post, type ApiResult, type Fixture } from "./helpers";
import { wav } from "./wav";

// Every /v1 write as a GraphQL mutation: same scope, same zod schema, same service, and the
// same error codes (in extensions.code, with the request ID).

const ITEM = "id kind status error payload { chatId to isGroup }";

function dataOf(res: ApiResult, field: string) {
  expect(res.status).toBe(200);
  expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
  return res.body.data[field];
}

function errorOf(res: ApiResult) {
  expect(res.status).toBe(200);
  const error = res.body.errors?.[0];
  expect(error, JSON.stringify(res.body)).toBeDefined();
  expect(error.extensions.request_id).toBe(res.headers.get("request-id"));
  return error.extensions as { code: string; type: string; param?: string; request_id: string };
}

const mutate = (f: Fixture | string, name: string, input: Record<string, unknown>, selection = ITEM, inputType = `${name[0]!.toUpperCase()}${name.slice(1)}Input`) =>
  gql(typeof f === "string" ? f : f.key, `mutation($input: ${inputType}!) { ${name}(input: $input) { ${selection} } }`, { input });


describe("GraphQL mutations: sending", () => {
  it("sendMessage stores a pending outbox item; the runner sends it and the item links to the message", async () => {
    const f = await makeAccount();
    const alice = phone();
    const incoming = await inbound(f, alice, "hi");
    const item = dataOf(await mutate(f, "sendMessage", { from: f.line.handle, to: alice, text: "hello back", replyTo: incoming.guid }), "sendMessage");
    expect(item).toEqual({
      id: expect.stringMatching(/^obx_/),
      kind: "message",
      status: "pending",
      error: null,
      payload: { chatId: incoming.chat_id, to: alice, isGroup: false },
    });
    startRunner();
    let polled: { status: string; message: { text: string; isFromMe: boolean; replyTo: { id: string } } | null } | null = null;
    try {
      await vi.waitFor(
        async () => {
          const res = await gql(f.key, `query($id: String!) { outboxItem(id: $id) { status message { text isFromMe replyTo { id } } } }`, { id: item.id });
          polled = dataOf(res, "outboxItem");
          expect(polled?.status).toBe("sent");
        },
        { timeout: 15_000, interval: 50 },
      );
    } finally {
      await stopRunner(); // the other tests look at items as accepted
    }
    expect(polled!.message).toEqual({ text: "hello back", isFromMe: true, replyTo: { id: incoming.id } });
  });

  it("answers the REST error codes in extensions: contact_has_not_messaged, validation, scope", async () => {
    const f = await makeAccount();
    const alice = phone();
    await inbound(f, alice, "hi");
    const stranger = errorOf(await mutate(f, "sendMessage", { from: f.line.handle, to: phone(), text: "cold call" }));
    expect(stranger).toMatchObject({ code: "contact_has_not_messaged", type: "invalid_request_error", param: "to" });
    expect(stranger.request_id).toMatch(/^req_/);

    const cases: [Record<string, unknown>, string, string][] = [
      [{ from: f.line.handle, to: alice }, "missing_required_parameter", "text"],
      [{ from: f.line.handle, to: alice, attachments: [newId("file"), newId("file")] }, "invalid_parameter_value", "attachments"],
      [{ from: f.line.handle, to: alice, attachments: [newId("file")] }, "file_not_found", "attachments"],
      [{ from: f.line.handle, to: alice, text: "x", replyTo: "NO-SUCH-GUID" }, "message_not_found", "replyTo"],
      [{ from: f.line.handle, to: alice, text: "x".repeat(20_001) }, "invalid_parameter_value", "text"],
      [{ from: "+19999999999", to: alice, text: "x" }, "line_not_found", "from"],
    ];
    for (const [input, code, param] of cases) {
      expect(errorOf(await mutate(f, "sendMessage", input)), JSON.stringify(input).slice(0, 80)).toMatchObject({ code, param });
    }
    const readOnly = await makeKey(f.accountId, { scopes: ["messages:read"] });
    expect(errorOf(await mutate(readOnly, "sendMessage", { from: f.line.handle, to: alice, text: "x" }))).toMatchObject({
      code: "insufficient_scope",
      type: "authorization_error",
    });
    const restricted = await makeKey(f.accountId, { lineIds: [newId("line")] });
    expect(errorOf(await mutate(restricted, "sendMessage", { from: f.line.handle, to: alice, text: "x" }))).toMatchObject({
      code: "line_not_accessible",
    });
  });

  it("sendReaction, sendTyping and sendReceipt store their kinds of item; advanced features are required", async () => {
    const f = await makeAccount();
    const alice = phone();
    const m = await inbound(f, alice, "react to me");
    const reaction = dataOf(
      await mutate(f, "sendReaction", { from: f.line.handle, to: alice, messageId: m.id, type: "love" }, `${ITEM} payload { ... on ReactionOutboxPayload { messageId type } }`),
      "sendReaction",
    );
    expect(reaction).toMatchObject({ kind: "reaction", status: "pending", payload: { messageId: m.id, type: "love" } });
    const typing = dataOf(
      await mutate(f, "sendTyping", { from: f.line.handle, to: alice, state: "off" }, `${ITEM} payload { ... on TypingOutboxPayload { isTyping } }`),
      "sendTyping",
    );
    expect(typing).toMatchObject({ kind: "typing", payload: { isTyping: false } });
    const receipt = dataOf(await mutate(f, "sendReceipt", { from: f.line.handle, to: alice }), "sendReceipt");
    expect(receipt).toMatchObject({ kind: "receipt", status: "pending", payload: { to: alice } });

    const basic = await makeAccount({ advanced: false });
    const bob = phone();
    const m2 = await inbound(basic, bob, "hi");
    expect(errorOf(await mutate(basic, "sendReaction", { from: basic.line.handle, to: bob, messageId: m2.id, type: "like" }))).toMatchObject({
      code: "advanced_features_required",
      param: "from",
    });
    const bad = await gql(f.key, `mutation { sendReaction(input: { from: "x", to: "y", messageId: "z", type: nope }) { id } }`);
    expect(bad.body.errors[0].extensions.code).toBe("GRAPHQL_VALIDATION_FAILED");
  });

  it("uploadFile takes base64 bytes and returns a File usable as an attachment; sendAudioMessage converts a recording", async () => {
    const f = await makeAccount();
    const alice = phone();
    await inbound(f, alice, "send me the file");
    const file = dataOf(
      await mutate(f, "uploadFile", { contentBase64: Buffer.from("%PDF-1.4 bytes").toString("base64"), mimeType: "application/pdf", filename: "dir/answer.pdf" }, "id url filename mimeType size"),
      "uploadFile",
    );
    expect(file).toEqual({
      id: expect.stringMatching(/^file_/),
      url: expect.stringContaining(`/api/files/${file.id}?expires=`),
      filename: "answer.pdf",
      mimeType: "application/pdf",
      size: 14,
    });
    const item = dataOf(
      await mutate(f, "sendMessage", { from: f.line.handle, to: alice, attachments: [file.id] }, `${ITEM} payload { ... on MessageOutboxPayload { attachmentIds text } }`),
      "sendMessage",
    );
    expect(item.payload).toMatchObject({ attachmentIds: [file.id], text: null });

    expect(errorOf(await mutate(f, "uploadFile", { contentBase64: "" }, "id"))).toMatchObject({ code: "empty_file" });
    expect(errorOf(await mutate(f, "uploadFile", { contentBase64: "not base64!" }, "id"))).toMatchObject({
      code: "invalid_parameter_value",
      param: "contentBase64",
    });
    const eleven = Buffer.alloc(10 * 1024 * 1024 + 1).toString("base64");
    expect(errorOf(await mutate(f, "uploadFile", { contentBase64: eleven }, "id"))).toMatchObject({ code: "file_too_large", param: "contentBase64" });

    const recording = dataOf(await mutate(f, "uploadFile", { contentBase64: wav().toString("base64"), filename: "memo.wav" }, "id"), "uploadFile");
    const audio = dataOf(
      await mutate(f, "sendAudioMessage", { from: f.line.handle, to: alice, audioMessage: recording.id }, `${ITEM} payload { ... on MessageOutboxPayload { isAudioMessage attachmentIds } }`),
      "sendAudioMessage",
    );
    expect(audio).toMatchObject({ kind: "message", status: "pending", payload: { isAudioMessage: true, attachmentIds: [expect.stringMatching(/^file_/)] } });
    expect(audio.payload.attachmentIds[0]).not.toBe(recording.id);
    expect(errorOf(await mutate(f, "sendAudioMessage", { from: f.line.handle, to: alice, audioMessage: file.id }))).toMatchObject({
      code: "invalid_parameter_value",
      param: "audioMessage",
    });
  });

  it("uploadFile refuses a 1 MB hostile contentBase64 in well under a second (linear validation), and decodes wrapped base64", async () => {
    const f = await makeAccount();
    await mutate(f, "uploadFile", { contentBase64: "!" }, "id"); // warm-up: the first request builds the schema
    // Long whitespace runs ending in a character outside the alphabet: the former regex took
    // quadratic time on these (160 k characters blocked the event loop for 16 s).
    for (const hostile of [" ".repeat(1_000_000) + "!", "A".repeat(500_000) + "\n".repeat(500_000) + "=!", "=".repeat(1_000_000)]) {
      const started = performance.now();
      const res = await mutate(f, "uploadFile", { contentBase64: hostile }, "id");
      expect(performance.now() - started).toBeLessThan(500); // measured: 11-36 ms each
      expect(errorOf(res)).toMatchObject({ code: "invalid_parameter_value", param: "contentBase64" });
    }
    const bytes = Buffer.from(Array.from({ length: 700_000 }, (_, i) => (i * 7919) % 256));
    const wrapped = bytes.toString("base64").replace(/.{76}/g, "$&\r\n");
    const file = dataOf(await mutate(f, "uploadFile", { contentBase64: wrapped, mimeType: "application/octet-stream" }, "id url size"), "uploadFile");
    expect(file.size).toBe(bytes.length);
    const { GET } = await import("@/app/api/files/[id]/route");
    const download = await GET(new Request(file.url), { params: Promise.resolve({ id: file.id }) });
    expect(Buffer.from(await download.arrayBuffer()).equals(bytes)).toBe(true);
  });
});

describe("GraphQL request size", () => {
  it("a chunked request body (no Content-Length) is cut off at 16 MiB with request_too_large, the rest unread", async () => {
    const f = await makeAccount();
    const state = { pulls: 0, cancelled: false };
    const prefix = new TextEncoder().encode(`{"query":"mutation($c: String!) { uploadFile(input: { contentBase64: $c }) { id } }","variables":{"c":"`);
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.enqueue(state.pulls++ === 0 ? prefix : new Uint8Array(1024 * 1024).fill(65)); // "AAAA…", endless
      },
      cancel() {
        state.cancelled = true;
      },
    });
    const { dispatch } = await import("./helpers");
    const res = await dispatch(
      new Request("http://localhost:3000/api/graphql", {
        method: "POST",
        body,
        duplex: "half",
        headers: { authorization: `Bearer ${f.key}`, "content-type": "application/json" },
      } as RequestInit),
    );
    const json = await res.json();
    expect(res.status).toBe(413);
    expect(json.errors[0].extensions).toMatchObject({ code: "request_too_large", request_id: expect.stringMatching(/^req_/) });
    expect(state.pulls).toBeLessThanOrEqual(20);
    expect(state.cancelled).toBe(true);
  });
});

describe("GraphQL mutations: webhooks and the sandbox", () => {
  const WEBHOOK = "id url events isActive disabledReason lineIds";

  it("createWebhook returns the secret once; rotate, disable, enable, resend and delete work as in /v1", async () => {
    const f = await makeAccount();
    const created = dataOf(
      await mutate(f, "createWebhook", { from: f.line.handle, url: "http://127.0.0.1:9/hook", events: ["message.received"] }, `secret webhook { ${WEBHOOK} }`),
      "createWebhook",
    );
    expect(created.secret).toMatch(/^whsec_/);
    expect(created.webhook).toEqual({
      id: expect.stringMatching(/^wh_/),
      url: "http://127.0.0.1:9/hook",
      events: ["message.received"],
      isActive: true,
      disabledReason: null,
      lineIds: [f.line.id],
    });
    const id = created.webhook.id;
    expect(errorOf(await mutate(f, "createWebhook", { from: f.line.handle, url: "http://127.0.0.1:9/", events: ["typing.started"] }, "secret"))).toMatchObject({
      code: "invalid_parameter_value",
      param: "events",
    });

    const rotated = dataOf(await mutate(f, "rotateWebhookSecret", { id }, "secret webhook { id }", "WebhookIdInput"), "rotateWebhookSecret");
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(created.secret);
    expect(dataOf(await mutate(f, "disableWebhook", { id }, WEBHOOK, "WebhookIdInput"), "disableWebhook")).toMatchObject({
      isActive: false,
      disabledReason: "disabled by the owner",
    });
    expect(dataOf(await mutate(f, "enableWebhook", { id }, WEBHOOK, "WebhookIdInput"), "enableWebhook")).toMatchObject({ isActive: true, disabledReason: null });

    await inbound(f, phone(), "an event");
    const prisma = await db();
    const delivery = await prisma.webhookDelivery.findFirstOrThrow({ where: { webhookId: id } });
    expect(errorOf(await mutate(f, "resendWebhookDelivery", { id: delivery.id }, "resent"))).toMatchObject({ code: "invalid_parameter_value", param: "id" });
    await prisma.webhookDelivery.update({ where: { id: delivery.id }, data: { status: "failed", attempts: 8 } });
    expect(dataOf(await mutate(f, "resendWebhookDelivery", { id: delivery.id }, "resent"), "resendWebhookDelivery")).toEqual({ resent: 1 });
    await prisma.webhookDelivery.update({ where: { id: delivery.id }, data: { status: "failed" } });
    expect(dataOf(await mutate(f, "resendWebhookDelivery", { webhookId: id, since: 0 }, "resent"), "resendWebhookDelivery")).toEqual({ resent: 1 });
    expect(errorOf(await mutate(f, "resendWebhookDelivery", { webhookId: id }, "resent"))).toMatchObject({ code: "missing_required_parameter", param: "since" });

    expect(dataOf(await mutate(f, "deleteWebhook", { id }, "id deleted", "WebhookIdInput"), "deleteWebhook")).toEqual({ id, deleted: true });
    expect(errorOf(await mutate(f, "deleteWebhook", { id }, "id", "WebhookIdInput"))).toMatchObject({ code: "webhook_not_found", type: "not_found_error" });
    const readOnly = await makeKey(f.accountId, { scopes: ["webhooks:read"] });
    expect(errorOf(await mutate(readOnly, "deleteWebhook", { id }, "id", "WebhookIdInput"))).toMatchObject({ code: "insufficient_scope" });
  });

  it("activateSandbox issues the activation code; accounts without an owner get sandbox_requires_owner", async () => {
    const f = await makeAccount();
    const res = await gql(f.key, `mutation { activateSandbox { status activationCode usage { used limit remaining resetsAt } } }`);
    expect(dataOf(res, "activateSandbox")).toEqual({
      status: "pending",
      activationCode: expect.stringMatching(/^RELAY-/),
      usage: { used: 0, limit: 50, remaining: 50, resetsAt: expect.any(Number) },
    });
    const ownerless = await makeAccount({ noOwner: true });
    expect(errorOf(await gql(ownerless.key, `mutation { activateSandbox { status } }`))).toMatchObject({ code: "sandbox_requires_owner" });
    await post("/api/simulator/messages", f.key, { line: "+15555550100", from: phone(), text: res.body.data.activateSandbox.activationCode });
    expect(dataOf(await gql(f.key, `{ sandbox { status contactIdentifier } }`), "sandbox")).toMatchObject({ status: "active" });
  });
});

import { beforeAll, describe, expect, it } from "vitest";
import { newId } from "@/server/kernel/ids";
import { type ApiResult, call, type Fixture, gql, inbound, makeAccount, phone } from "./helpers";

// SPEC.md "Errors": an ID of the right kind that names nothing is 404 with the resource's
// *_not_found code, whether or not it looks like one this server minted; only a value that is
// not an ID of that kind at all (another kind's prefix, or no prefix where only IDs are taken)
// is 400 invalid_parameter_value.

const q = encodeURIComponent;
const UNKNOWN = {
  outbox: ["obx_doesnotexist000", newId("outbox")],
  message: ["msg_doesnotexist000", newId("message")],
  chat: ["cht_doesnotexist000", newId("chat")],
  file: ["file_doesnotexist000", newId("file")],
  webhook: ["wh_doesnotexist000", newId("webhook")],
  delivery: ["dlv_doesnotexist000", newId("delivery")],
  line: ["ln_doesnotexist000", newId("line")],
};

let f: Fixture;
let alice: string;

beforeAll(async () => {
  f = await makeAccount();
  alice = phone();
  await inbound(f, alice, "hi");
});

interface Case {
  name: string;
  request: (id: string) => Promise<ApiResult>;
  ids: string[];
  code: string;
  param: string;
}

const from = () => f.line.handle;

const REST: Case[] = [
  { name: "GET /v1/outbox?id", request: (id) => call("GET", `/v1/outbox?id=${q(id)}`, { key: f.key }), ids: UNKNOWN.outbox, code: "outbox_item_not_found", param: "id" },
  { name: "GET /v1/messages?id", request: (id) => call("GET", `/v1/messages?id=${q(id)}`, { key: f.key }), ids: UNKNOWN.message, code: "message_not_found", param: "id" },
  { name: "GET /v1/messages?from=ln_", request: (id) => call("GET", `/v1/messages?from=${q(id)}`, { key: f.key }), ids: UNKNOWN.line, code: "line_not_found", param: "from" },
  { name: "GET /v1/messages?to", request: (id) => call("GET", `/v1/messages?from=${q(from())}&to=${q(id)}`, { key: f.key }), ids: UNKNOWN.chat, code: "chat_not_found", param: "to" },
  { name: "GET /v1/reactions?message_id", request: (id) => call("GET", `/v1/reactions?message_id=${q(id)}`, { key: f.key }), ids: UNKNOWN.message, code: "message_not_found", param: "message_id" },
  { name: "GET /v1/typing?to", request: (id) => call("GET", `/v1/typing?from=${q(from())}&to=${q(id)}`, { key: f.key }), ids: UNKNOWN.chat, code: "chat_not_found", param: "to" },
  { name: "GET /v1/receipts?to", request: (id) => call("GET", `/v1/receipts?from=${q(from())}&to=${q(id)}`, { key: f.key }), ids: UNKNOWN.chat, code: "chat_not_found", param: "to" },
  { name: "GET /v1/files?id", request: (id) => call("GET", `/v1/files?id=${q(id)}`, { key: f.key }), ids: UNKNOWN.file, code: "file_not_found", param: "id" },
  { name: "POST /v1/messages to", request: (id) => call("POST", "/v1/messages", { key: f.key, body: { from: from(), to: id, text: "x" } }), ids: UNKNOWN.chat, code: "chat_not_found", param: "to" },
  { name: "POST /v1/messages reply_to", request: (id) => call("POST", "/v1/messages", { key: f.key, body: { from: from(), to: alice, text: "x", reply_to: id } }), ids: UNKNOWN.message, code: "message_not_found", param: "reply_to" },
  { name: "POST /v1/messages attachments", request: (id) => call("POST", "/v1/messages", { key: f.key, body: { from: from(), to: alice, attachments: [id] } }), ids: UNKNOWN.file, code: "file_not_found", param: "attachments" },
  { name: "POST /v1/audio-messages audio_message", request: (id) => call("POST", "/v1/audio-messages", { key: f.key, body: { from: from(), to: alice, audio_message: id } }), ids: UNKNOWN.file, code: "file_not_found", param: "audio_message" },
  { name: "POST /v1/reactions message_id", request: (id) => call("POST", "/v1/reactions", { key: f.key, body: { from: from(), to: alice, message_id: id, type: "love" } }), ids: UNKNOWN.message, code: "message_not_found", param: "message_id" },
  { name: "POST /v1/typing to", request: (id) => call("POST", "/v1/typing", { key: f.key, body: { from: from(), to: id } }), ids: UNKNOWN.chat, code: "chat_not_found", param: "to" },
  { name: "POST /v1/receipts to", request: (id) => call("POST", "/v1/receipts", { key: f.key, body: { from: from(), to: id } }), ids: UNKNOWN.chat, code: "chat_not_found", param: "to" },
  { name: "DELETE /v1/webhooks id", request: (id) => call("DELETE", "/v1/webhooks", { key: f.key, body: { id } }), ids: UNKNOWN.webhook, code: "webhook_not_found", param: "id" },
  ...["enable", "disable", "rotate-secret"].map((action) => ({
    name: `POST /v1/webhooks/${action} id`,
    request: (id: string) => call("POST", `/v1/webhooks/${action}`, { key: f.key, body: { id } }),
    ids: UNKNOWN.webhook,
    code: "webhook_not_found",
    param: "id",
  })),
  { name: "GET /v1/webhooks/deliveries?webhook_id", request: (id) => call("GET", `/v1/webhooks/deliveries?webhook_id=${q(id)}`, { key: f.key }), ids: UNKNOWN.webhook, code: "webhook_not_found", param: "webhook_id" },
  { name: "GET /v1/webhooks/deliveries?id", request: (id) => call("GET", `/v1/webhooks/deliveries?id=${q(id)}`, { key: f.key }), ids: UNKNOWN.delivery, code: "delivery_not_found", param: "id" },
  { name: "POST /v1/webhooks/deliveries/resend id", request: (id) => call("POST", "/v1/webhooks/deliveries/resend", { key: f.key, body: { id } }), ids: UNKNOWN.delivery, code: "delivery_not_found", param: "id" },
  { name: "POST /v1/webhooks/deliveries/resend webhook_id", request: (id) => call("POST", "/v1/webhooks/deliveries/resend", { key: f.key, body: { webhook_id: id, since: 0 } }), ids: UNKNOWN.webhook, code: "webhook_not_found", param: "webhook_id" },
];

/** Values that are not IDs of the kind the parameter takes: 400 invalid_parameter_value. */
const NOT_AN_ID: { name: string; request: (id: string) => Promise<ApiResult>; values: string[]; param: string }[] = [
  { name: "GET /v1/outbox?id", request: (id) => call("GET", `/v1/outbox?id=${q(id)}`, { key: f.key }), values: ["nonsense", newId("file")], param: "id" },
  { name: "GET /v1/files?id", request: (id) => call("GET", `/v1/files?id=${q(id)}`, { key: f.key }), values: ["nonsense", newId("outbox")], param: "id" },
  { name: "GET /v1/messages?id", request: (id) => call("GET", `/v1/messages?id=${q(id)}`, { key: f.key }), values: [newId("outbox")], param: "id" },
  { name: "GET /v1/messages?to", request: (id) => call("GET", `/v1/messages?from=${q(from())}&to=${q(id)}`, { key: f.key }), values: [newId("message")], param: "to" },
  { name: "POST /v1/messages attachments", request: (id) => call("POST", "/v1/messages", { key: f.key, body: { from: from(), to: alice, attachments: [id] } }), values: ["nonsense", newId("message")], param: "attachments" },
  { name: "POST /v1/messages reply_to", request: (id) => call("POST", "/v1/messages", { key: f.key, body: { from: from(), to: alice, text: "x", reply_to: id } }), values: [newId("chat")], param: "reply_to" },
  { name: "POST /v1/audio-messages audio_message", request: (id) => call("POST", "/v1/audio-messages", { key: f.key, body: { from: from(), to: alice, audio_message: id } }), values: ["nonsense", newId("message")], param: "audio_message" },
  { name: "DELETE /v1/webhooks id", request: (id) => call("DELETE", "/v1/webhooks", { key: f.key, body: { id } }), values: ["nonsense", newId("delivery")], param: "id" },
  { name: "POST /v1/webhooks/enable id", request: (id) => call("POST", "/v1/webhooks/enable", { key: f.key, body: { id } }), values: ["nonsense", newId("delivery")], param: "id" },
  { name: "GET /v1/webhooks/deliveries?webhook_id", request: (id) => call("GET", `/v1/webhooks/deliveries?webhook_id=${q(id)}`, { key: f.key }), values: ["nonsense", newId("delivery")], param: "webhook_id" },
  { name: "GET /v1/webhooks/deliveries?id", request: (id) => call("GET", `/v1/webhooks/deliveries?id=${q(id)}`, { key: f.key }), values: ["nonsense", newId("webhook")], param: "id" },
  { name: "POST /v1/webhooks/deliveries/resend id", request: (id) => call("POST", "/v1/webhooks/deliveries/resend", { key: f.key, body: { id } }), values: ["nonsense", newId("webhook")], param: "id" },
];

describe("/v1: an unknown ID of the right kind is 404 *_not_found", () => {
  for (const c of REST) {
    it(c.name, async () => {
      for (const id of c.ids) {
        const res = await c.request(id);
        expect(res.status, `${id}: ${JSON.stringify(res.body)}`).toBe(404);
        expect(res.body.error).toMatchObject({ type: "not_found_error", code: c.code, param: c.param });
        expect(res.body.error.request_id ?? res.headers.get("request-id")).toMatch(/^req_/);
      }
    });
  }
});

describe("/v1: a value that is not an ID of the parameter's kind is 400 invalid_parameter_value", () => {
  for (const c of NOT_AN_ID) {
    it(c.name, async () => {
      for (const value of c.values) {
        const res = await c.request(value);
        expect(res.status, `${value}: ${JSON.stringify(res.body)}`).toBe(400);
        expect(res.body.error).toMatchObject({ type: "invalid_request_error", code: "invalid_parameter_value", param: c.param });
      }
    });
  }
});

describe("GraphQL: an unknown ID of the right kind is *_not_found", () => {
  const fields: [string, string, string[], string][] = [
    ["outboxItem", `query($id: String!) { outboxItem(id: $id) { id } }`, UNKNOWN.outbox, "outbox_item_not_found"],
    ["message", `query($id: String!) { message(id: $id) { id } }`, UNKNOWN.message, "message_not_found"],
    ["file", `query($id: String!) { file(id: $id) { id } }`, UNKNOWN.file, "file_not_found"],
    ["webhook", `query($id: String!) { webhook(id: $id) { id } }`, UNKNOWN.webhook, "webhook_not_found"],
    ["webhookDelivery", `query($id: String!) { webhookDelivery(id: $id) { id } }`, UNKNOWN.delivery, "delivery_not_found"],
    ["chat", `query($id: String!, $from: String!) { chat(from: $from, to: $id) { id } }`, UNKNOWN.chat, "chat_not_found"],
    ["deleteWebhook", `mutation($id: String!) { deleteWebhook(input: { id: $id }) { id } }`, UNKNOWN.webhook, "webhook_not_found"],
    ["sendMessage replyTo", `mutation($id: String!, $from: String!, $to: String!) { sendMessage(input: { from: $from, to: $to, text: "x", replyTo: $id }) { id } }`, UNKNOWN.message, "message_not_found"],
    ["sendMessage attachments", `mutation($id: String!, $from: String!, $to: String!) { sendMessage(input: { from: $from, to: $to, attachments: [$id] }) { id } }`, UNKNOWN.file, "file_not_found"],
    ["resendWebhookDelivery", `mutation($id: String!) { resendWebhookDelivery(input: { id: $id }) { resent } }`, UNKNOWN.delivery, "delivery_not_found"],
  ];
  for (const [name, query, ids, code] of fields) {
    it(name, async () => {
      for (const id of ids) {
        const res = await gql(f.key, query, { id, from: f.line.handle, to: alice });
        expect(res.status).toBe(200);
        expect(res.body.errors?.[0]?.extensions, `${id}: ${JSON.stringify(res.body)}`).toMatchObject({ code, type: "not_found_error" });
      }
    });
  }
});

import { z } from "zod";
import type { Scope } from "../../services/access/scopes";
import type { ErrorCode } from "../../kernel/errors";
import * as R from "../../wire/responses";
import { ChatIdQuery, ChatStateQuery, FileQuery, ListChatsQuery, ListLinesQuery, ListMessagesQuery, ListReactionsQuery, OutboxIdQuery, OutboxQuery } from "../../services/schemas/v1";
import { RescheduleBody } from "../../services/messaging/outbox";
import { CapacityQuery } from "../../services/lines/capacity";
import { SendAudioMessageBody } from "../../services/messaging/send-audio";
import { SendMessageBody, SendReactionBody, SendReceiptBody, SendTypingBody } from "../../services/messaging/send";
import { ListDeliveriesQuery, ResendBody, WebhookIdBody } from "../../services/webhooks/webhook-deliveries";
import { ListenQuery } from "../../services/webhooks/listen";
import { CreateWebhookBody, DeleteWebhookBody, ListWebhooksQuery } from "../../services/webhooks/webhooks";

// Every /v1 operation with its schemas: the source of the OpenAPI document (and of the client
// library's types). tests/openapi.test.ts fails when a route answers that is not listed here,
// or when a listed operation's scope is not the one the route enforces.

export interface Operation {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  path: string;
  summary: string;
  description?: string;
  tag: string;
  /** Scope the key needs; when absent, every key may call it. */
  scope?: Scope;
  query?: z.ZodType;
  body?: z.ZodType;
  /** The body is the file's raw bytes (POST /v1/files). */
  rawBody?: boolean;
  status?: number;
  /** Success body; absent for a redirect or a stream. */
  response?: z.ZodType;
  redirect?: boolean;
  /** Answers server-sent events (each `data` a WebhookEvent). */
  stream?: boolean;
  /** Errors besides authentication, scope and rate limit, which every operation may answer. */
  errors: ErrorCode[];
  /** A request body or query to show in the reference. */
  example?: Record<string, unknown>;
}

export const COMMON_ERRORS: ErrorCode[] = [
  "missing_api_key",
  "invalid_api_key",
  "insufficient_scope",
  "rate_limit_exceeded",
  "internal_error",
  // The database is unreachable or overloaded: retry after Retry-After.
  "service_unavailable",
  // Headers over Node's limit (16 KiB by default), refused before any route runs.
  "request_headers_too_large",
];
const LINE_ERRORS: ErrorCode[] = ["line_not_found", "line_not_accessible", "sandbox_not_activated", "sandbox_requires_owner", "invalid_parameter_value", "missing_required_parameter"];
const WRITE_ERRORS: ErrorCode[] = [
  ...LINE_ERRORS,
  "chat_not_found",
  "contact_has_not_messaged",
  "sandbox_contact_mismatch",
  "sandbox_quota_exceeded",
  "idempotency_key_reused",
  "idempotency_key_in_use",
  "invalid_json",
  // Guardrails of the key (docs/agents.md).
  "recipient_not_allowed",
  "chat_paused",
];
/** Sends that guardrails count: the limits on top of WRITE_ERRORS. */
const COUNTED_ERRORS: ErrorCode[] = ["reply_required", "key_send_limit_exceeded"];

/** Operations that name a webhook (or its delivery): another line's is 403, as every object of a line the key may not use. */
const WEBHOOK_ERRORS: ErrorCode[] = ["webhook_not_found", "line_not_accessible", "invalid_parameter_value"];

export const MessagePage = R.page(R.MessageSchema, "Message");

export const OPERATIONS = {
  listLines: {
    method: "GET",
    path: "/v1/lines",
    tag: "Lines",
    summary: "List lines",
    description: "The lines this key can use: its account's, and the sandbox line for accounts with an owner. Oldest first.",
    scope: "lines:read",
    query: ListLinesQuery,
    response: R.page(R.LineSchema, "Line"),
    errors: ["invalid_parameter_value"],
  },
  listChats: {
    method: "GET",
    path: "/v1/chats",
    tag: "Chats",
    summary: "List chats of a line",
    description: "Most recent activity first.",
    scope: "chats:read",
    query: ListChatsQuery,
    response: R.page(R.ChatSchema, "Chat"),
    errors: LINE_ERRORS,
    example: { from: "+15550001000", limit: 20 },
  },
  listMessages: {
    method: "GET",
    path: "/v1/messages",
    tag: "Messages",
    summary: "List messages, or get one",
    description:
      "Messages of a line (`from`), or of one chat (`to`: phone number, account ID or cht_ ID), newest first. With `id` (msg_ ID or platform GUID), one Message instead of a page. With `query` (an extension), only the messages whose text matches it (full-text search), in the same order and pages.",
    scope: "messages:read",
    query: ListMessagesQuery,
    response: z.union([MessagePage, R.MessageSchema]),
    errors: [...LINE_ERRORS, "chat_not_found", "message_not_found"],
    example: { from: "+15550001000", to: "+15551230001" },
  },
  sendMessage: {
    method: "POST",
    path: "/v1/messages",
    tag: "Messages",
    summary: "Send a message",
    description:
      "Text and/or one uploaded file (file_ ID), optionally as a reply. Every rule is checked before answering; delivery happens after: poll GET /v1/outbox?id= or listen for message.sent.",
    scope: "messages:write",
    body: SendMessageBody,
    response: R.AcceptedSchema,
    errors: [...WRITE_ERRORS, ...COUNTED_ERRORS, "file_not_found", "message_not_found"],
    example: { from: "+15550001000", to: "+15551230001", text: "Hello!" },
  },
  sendAudioMessage: {
    method: "POST",
    path: "/v1/audio-messages",
    tag: "Messages",
    summary: "Send a voice memo",
    description: "An uploaded audio file (m4a, mp3, wav, caf, aiff), converted to the platform's voice memo format before the answer.",
    scope: "messages:write",
    body: SendAudioMessageBody,
    response: R.AcceptedSchema,
    errors: [...WRITE_ERRORS, ...COUNTED_ERRORS, "file_not_found", "message_not_found", "advanced_features_required", "audio_conversion_unavailable", "audio_conversion_busy", "storage_unavailable"],
    example: { from: "+15550001000", to: "+15551230001", audio_message: "file_01h..." },
  },
  listReactions: {
    method: "GET",
    path: "/v1/reactions",
    tag: "Reactions",
    summary: "List reactions to a message",
    scope: "reactions:read",
    query: ListReactionsQuery,
    response: R.page(R.ReactionSchema, "Reaction"),
    errors: ["message_not_found", "invalid_parameter_value", "line_not_accessible", "sandbox_not_activated"],
  },
  sendReaction: {
    method: "POST",
    path: "/v1/reactions",
    tag: "Reactions",
    summary: "React to a message",
    scope: "reactions:write",
    body: SendReactionBody,
    response: R.AcceptedSchema,
    errors: [...WRITE_ERRORS, "key_send_limit_exceeded", "message_not_found", "advanced_features_required"],
    example: { from: "+15550001000", to: "+15551230001", message_id: "msg_01h...", type: "love" },
  },
  listTyping: {
    method: "GET",
    path: "/v1/typing",
    tag: "Typing",
    summary: "Typing indicators in a chat",
    scope: "typing:read",
    query: ChatStateQuery,
    response: R.page(R.TypingIndicatorSchema, "TypingIndicator"),
    errors: [...LINE_ERRORS, "chat_not_found"],
  },
  sendTyping: {
    method: "POST",
    path: "/v1/typing",
    tag: "Typing",
    summary: "Start or stop typing",
    scope: "typing:write",
    body: SendTypingBody,
    response: R.AcceptedSchema,
    errors: [...WRITE_ERRORS, "advanced_features_required"],
    example: { from: "+15550001000", to: "+15551230001", state: "on" },
  },
  listReceipts: {
    method: "GET",
    path: "/v1/receipts",
    tag: "Receipts",
    summary: "Read receipts in a chat",
    scope: "receipts:read",
    query: ChatStateQuery,
    response: R.page(R.ReadReceiptSchema, "ReadReceipt"),
    errors: [...LINE_ERRORS, "chat_not_found"],
  },
  sendReceipt: {
    method: "POST",
    path: "/v1/receipts",
    tag: "Receipts",
    summary: "Mark a chat read",
    scope: "receipts:write",
    body: SendReceiptBody,
    response: R.AcceptedSchema,
    errors: [...WRITE_ERRORS, "advanced_features_required"],
    example: { from: "+15550001000", to: "+15551230001" },
  },
  getOutbox: {
    method: "GET",
    path: "/v1/outbox",
    tag: "Outbox",
    summary: "Get an outbox item, or list recent ones",
    description:
      "With `id`, one item (follow a write's delivery); otherwise recent items, newest first, filtered by `from` and `status`. A key with guardrails reaches only the sends it made: another's item is 404 `outbox_item_not_found`, here, on cancel and on reschedule.",
    scope: "outbox:read",
    query: OutboxQuery,
    response: z.union([R.page(R.OutboxItemSchema, "OutboxItem"), R.OutboxItemSchema]),
    errors: [...LINE_ERRORS, "outbox_item_not_found"],
  },
  cancelOutboxItem: {
    method: "DELETE",
    path: "/v1/outbox",
    tag: "Outbox",
    summary: "Cancel a pending send (extension)",
    description:
      "A pending item (scheduled, held, or waiting its turn) ends `failed` with `error: \"canceled\"` and `canceled_at`. An item already claimed, sent or failed, or one the owner approved to go now, answers 409 `outbox_item_not_cancelable`: a claim or an approval and a cancel never both win.",
    scope: "messages:write",
    query: OutboxIdQuery,
    response: R.OutboxItemSchema,
    errors: [...LINE_ERRORS, "outbox_item_not_found", "outbox_item_not_cancelable"],
    example: { id: "obx_01h..." },
  },
  rescheduleOutboxItem: {
    method: "PATCH",
    path: "/v1/outbox",
    tag: "Outbox",
    summary: "Reschedule a pending send (extension)",
    description: "Moves a pending item's send to `send_at` (Unix ms, in the future, at most 365 days ahead); it is held with `hold_reason: \"scheduled\"` until then and never sent at its old time.",
    scope: "messages:write",
    query: OutboxIdQuery,
    body: RescheduleBody,
    response: R.OutboxItemSchema,
    errors: [...LINE_ERRORS, "outbox_item_not_found", "outbox_item_not_reschedulable", "invalid_json"],
    example: { send_at: 1767261600000 },
  },
  approveOutboxItem: {
    method: "POST",
    path: "/v1/outbox/approve",
    tag: "Outbox",
    summary: "Approve a send held for approval (extension)",
    description:
      "A send by a key with the `require_approval` guardrail is pending with `hold_reason: \"approval\"` until the owner decides. Approving lets it go now, or at the `send_at` it asked for. Needs the `outbox:approve` scope, which no key with guardrails can hold. An item that no longer waits (approved, rejected, canceled) answers 409 `outbox_item_not_reviewable`: of an approval, a rejection and a cancel exactly one wins.",
    scope: "outbox:approve",
    query: OutboxIdQuery,
    response: R.OutboxItemSchema,
    errors: [...LINE_ERRORS, "outbox_item_not_found", "outbox_item_not_reviewable"],
    example: { id: "obx_01h..." },
  },
  rejectOutboxItem: {
    method: "POST",
    path: "/v1/outbox/reject",
    tag: "Outbox",
    summary: "Reject a send held for approval (extension)",
    description: "The held send ends `failed` with `error: \"rejected\"` and never goes; webhooks subscribed to `message.failed` hear of it. Needs the `outbox:approve` scope.",
    scope: "outbox:approve",
    query: OutboxIdQuery,
    response: R.OutboxItemSchema,
    errors: [...LINE_ERRORS, "outbox_item_not_found", "outbox_item_not_reviewable"],
    example: { id: "obx_01h..." },
  },
  pauseChat: {
    method: "POST",
    path: "/v1/chats/pause",
    tag: "Chats",
    summary: "Pause automated sending in a chat (extension)",
    description:
      "Human takeover: while a chat is paused, sends to it by keys with any guardrail answer 409 `chat_paused`; the owner's own sends (dashboard, keys without guardrails) still go. The chat shows `paused_at` and `paused_by`. Pausing a paused chat changes nothing. Needs the `outbox:approve` scope.",
    scope: "outbox:approve",
    query: ChatIdQuery,
    response: R.ChatSchema,
    errors: ["chat_not_found", "line_not_accessible", "invalid_parameter_value", "missing_required_parameter"],
    example: { id: "cht_01h..." },
  },
  resumeChat: {
    method: "POST",
    path: "/v1/chats/resume",
    tag: "Chats",
    summary: "Resume automated sending in a chat (extension)",
    description: "Ends a pause: keys with guardrails may send to the chat again. Needs the `outbox:approve` scope.",
    scope: "outbox:approve",
    query: ChatIdQuery,
    response: R.ChatSchema,
    errors: ["chat_not_found", "line_not_accessible", "invalid_parameter_value", "missing_required_parameter"],
    example: { id: "cht_01h..." },
  },
  getCapacity: {
    method: "GET",
    path: "/v1/capacity",
    tag: "Lines",
    summary: "What a line or pool can still send (extension)",
    description: "Per line: status, the new-contact budgets (used, limit, remaining, resets_at, per sliding hour and day), quiet hours, the held sends by reason, and when a new-contact send could next go out.",
    scope: "lines:read",
    query: CapacityQuery,
    response: R.CapacitySchema,
    errors: [...LINE_ERRORS, "pool_not_found"],
    example: { from: "+15550001000" },
  },
  listPools: {
    method: "GET",
    path: "/v1/pools",
    tag: "Lines",
    summary: "List sender pools (extension)",
    description: "A pool is a named set of lines; its pool_ ID is a `from` of POST /v1/messages, which then sends from the line that already talks with the contact, otherwise from the connected line with the most new-contact capacity left.",
    scope: "lines:read",
    response: R.page(R.PoolSchema, "Pool"),
    errors: [],
  },
  getSandbox: {
    method: "GET",
    path: "/v1/sandbox",
    tag: "Sandbox",
    summary: "Sandbox state",
    response: R.SandboxSchema,
    errors: ["sandbox_requires_owner"],
  },
  activateSandbox: {
    method: "POST",
    path: "/v1/sandbox",
    tag: "Sandbox",
    summary: "Start sandbox activation",
    description: "Issues the activation code to text to the sandbox line from your phone (idempotent while pending or active).",
    response: R.SandboxSchema,
    errors: ["sandbox_requires_owner"],
  },
  uploadFile: {
    method: "POST",
    path: "/v1/files",
    tag: "Files",
    summary: "Upload a file",
    description: "The body is the file's bytes; Content-Type is its type; X-Filename (optional, may be percent-encoded) its name. At most 100 MiB.",
    scope: "files:write",
    rawBody: true,
    status: 201,
    response: R.FileSchema,
    errors: ["empty_file", "file_too_large", "invalid_parameter_value", "storage_unavailable"],
  },
  downloadFile: {
    method: "GET",
    path: "/v1/files",
    tag: "Files",
    summary: "Download a file",
    description: "302 to a signed URL, valid for one hour.",
    scope: "files:read",
    query: FileQuery,
    redirect: true,
    errors: ["file_not_found", "line_not_accessible", "invalid_parameter_value"],
  },
  listWebhooks: {
    method: "GET",
    path: "/v1/webhooks",
    tag: "Webhooks",
    summary: "List webhooks",
    description: "Never with their secrets.",
    scope: "webhooks:read",
    query: ListWebhooksQuery,
    response: R.page(R.WebhookSchema, "Webhook"),
    errors: LINE_ERRORS,
  },
  createWebhook: {
    method: "POST",
    path: "/v1/webhooks",
    tag: "Webhooks",
    summary: "Create a webhook",
    description: "Subscribes a line's events. The signing secret (whsec_...) is in this response only.",
    scope: "webhooks:write",
    body: CreateWebhookBody,
    response: R.WebhookSchema,
    errors: [...LINE_ERRORS, "invalid_json"],
    example: { from: "+15550001000", url: "https://example.com/webhooks/relay", events: ["message.received", "message.sent"] },
  },
  deleteWebhook: {
    method: "DELETE",
    path: "/v1/webhooks",
    tag: "Webhooks",
    summary: "Delete a webhook",
    scope: "webhooks:write",
    body: DeleteWebhookBody,
    response: R.DeletedSchema,
    errors: [...WEBHOOK_ERRORS, "invalid_json"],
    example: { id: "wh_01h..." },
  },
  listDeliveries: {
    method: "GET",
    path: "/v1/webhooks/deliveries",
    tag: "Webhooks",
    summary: "Webhook deliveries (extension)",
    description: "A webhook's deliveries, newest first (`webhook_id`, optional `status`), or one delivery with its data and every attempt (`id`).",
    scope: "webhooks:read",
    query: ListDeliveriesQuery,
    response: z.union([R.page(R.WebhookDeliverySchema, "WebhookDelivery"), R.WebhookDeliverySchema]),
    errors: [...WEBHOOK_ERRORS, "delivery_not_found", "missing_required_parameter"],
  },
  resendDeliveries: {
    method: "POST",
    path: "/v1/webhooks/deliveries/resend",
    tag: "Webhooks",
    summary: "Resend deliveries (extension)",
    description:
      "`{ id }` sends one delivery again, or `{ webhook_id, since }` every failing one created since `since` (Unix ms): retries run out, or waiting for the next retry. Same delivery IDs.",
    scope: "webhooks:write",
    body: ResendBody,
    response: R.ResendSchema,
    errors: [...WEBHOOK_ERRORS, "delivery_not_found", "missing_required_parameter", "invalid_json"],
    example: { webhook_id: "wh_01h...", since: 1767225600000 },
  },
  rotateWebhookSecret: {
    method: "POST",
    path: "/v1/webhooks/rotate-secret",
    tag: "Webhooks",
    summary: "Rotate a webhook's secret (extension)",
    description: "A new secret, shown once; deliveries are signed with the old one too for 24 hours.",
    scope: "webhooks:write",
    body: WebhookIdBody,
    response: R.WebhookSchema,
    errors: [...WEBHOOK_ERRORS, "invalid_json"],
  },
  enableWebhook: {
    method: "POST",
    path: "/v1/webhooks/enable",
    tag: "Webhooks",
    summary: "Enable a webhook (extension)",
    description: "After 410 Gone or 5 days of failure; pending deliveries resume.",
    scope: "webhooks:write",
    body: WebhookIdBody,
    response: R.WebhookSchema,
    errors: [...WEBHOOK_ERRORS, "invalid_json"],
  },
  disableWebhook: {
    method: "POST",
    path: "/v1/webhooks/disable",
    tag: "Webhooks",
    summary: "Disable a webhook (extension)",
    description: "Pauses it; events meanwhile are not recorded for it.",
    scope: "webhooks:write",
    body: WebhookIdBody,
    response: R.WebhookSchema,
    errors: [...WEBHOOK_ERRORS, "invalid_json"],
  },
  listen: {
    method: "GET",
    path: "/v1/listen",
    tag: "Webhooks",
    summary: "Stream events (extension)",
    description:
      "The key's webhook events as server-sent events, for a developer's machine that cannot receive webhooks (the CLI's `listen --forward-to`). The first event is `session` ({ session, lines, events }); then one SSE event per delivery: `id` the dlv_ ID, `event` its name, `data` exactly the body a webhook receives. A session hears events only while a client is connected (and, across a server restart, until its client is back); reconnect with `session=` within 10 minutes to resume it (only with the key that opened the session; another key's answers as unknown). Once the key is revoked or expires, an `error` event whose data is the error envelope (code invalid_api_key) ends the stream: do not reconnect. Open streams are capped per key and per account (429 `too_many_streams` with Retry-After). A server that is stopping ends its streams and answers new ones 503 `server_shutting_down` (reconnect with backoff).",
    scope: "webhooks:read",
    query: ListenQuery,
    stream: true,
    errors: [...LINE_ERRORS, "server_shutting_down", "too_many_streams"],
  },
} as const satisfies Record<string, Operation>;


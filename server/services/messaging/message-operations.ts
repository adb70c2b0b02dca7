import { z } from "zod";
import { missingParam } from "../../kernel/errors";
import * as R from "../../wire/responses";
import { COUNTED_ERRORS, LINE_ERRORS, operation, WRITE_ERRORS } from "../operation";
import { ChatStateQuery, FileQuery, ListChatsQuery, ListMessagesQuery, ListReactionsQuery } from "../schemas/v1";
import { listTyping, listReceipts } from "./chat-state";
import { listChats } from "./chats";
import { fileDownloadUrl, MAX_FILE_BYTES, mimeTypeOf, uploadFile } from "./files";
import { getMessage, listMessages } from "./messages";
import { listReactions } from "./reactions";
import { SendMessageBody, SendReactionBody, SendReceiptBody, SendTypingBody, sendMessage, sendReaction, sendReceipt, sendTyping } from "./send";
import { SendAudioMessageBody, sendAudioMessage } from "./send-audio";
import { SendMessagesBody, sendMessages } from "./send-batch";

export const MessagePage = R.page(R.MessageSchema, "Message");

export const MESSAGE_OPERATIONS = {
  listChats: operation({
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
    cache: true,
    handler: ({ actor, query }) => listChats(actor, query),
  }),
  listMessages: operation({
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
    cache: true,
    handler: async ({ actor, query }) => {
      if (query.id) return getMessage(actor, query.id);
      if (!query.from) throw missingParam("from");
      return listMessages(actor, { ...query, from: query.from });
    },
  }),
  sendMessage: operation({
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
    handler: ({ actor, body, requestId }) => sendMessage(actor, body, requestId),
  }),
  sendMessages: operation({
    method: "POST",
    path: "/v1/messages/batch",
    tag: "Messages",
    summary: "Send up to 1,000 messages",
    description:
      "Extension. Each message is what POST /v1/messages takes, checked and accepted on its own: `data` answers in the same order, each the accepted outbox item or the error envelope the single form would have answered for that message. One Idempotency-Key covers the whole request. The request body limit (MAX_JSON_BODY_BYTES, 1 MiB by default) applies to the batch.",
    scope: "messages:write",
    body: SendMessagesBody,
    batch: true,
    response: z.object({ object: z.literal("list"), data: z.array(z.union([R.AcceptedSchema, R.ErrorSchema])) }).meta({ id: "BatchResult" }),
    errors: ["invalid_json", "invalid_parameter_value", "missing_required_parameter", "idempotency_key_reused", "idempotency_key_in_use", "request_too_large"],
    example: { messages: [{ from: "+15550001000", to: "+15551230001", text: "Hello!" }, { from: "+15550001000", to: "+15551230002", text: "Tomorrow at 9?", send_at: "2026-12-01T09:00:00Z" }] },
    handler: ({ actor, body, requestId }) => sendMessages(actor, body.messages, requestId),
  }),
  sendAudioMessage: operation({
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
    handler: ({ actor, body, requestId }) => sendAudioMessage(actor, body, requestId),
  }),
  listReactions: operation({
    method: "GET",
    path: "/v1/reactions",
    tag: "Reactions",
    summary: "List reactions to a message",
    scope: "reactions:read",
    query: ListReactionsQuery,
    response: R.page(R.ReactionSchema, "Reaction"),
    errors: ["message_not_found", "invalid_parameter_value", "line_not_accessible", "sandbox_not_activated"],
    handler: ({ actor, query }) => listReactions(actor, query),
  }),
  sendReaction: operation({
    method: "POST",
    path: "/v1/reactions",
    tag: "Reactions",
    summary: "React to a message",
    scope: "reactions:write",
    body: SendReactionBody,
    response: R.AcceptedSchema,
    errors: [...WRITE_ERRORS, "key_send_limit_exceeded", "message_not_found", "advanced_features_required"],
    example: { from: "+15550001000", to: "+15551230001", message_id: "msg_01h...", type: "love" },
    handler: ({ actor, body, requestId }) => sendReaction(actor, body, requestId),
  }),
  listTyping: operation({
    method: "GET",
    path: "/v1/typing",
    tag: "Typing",
    summary: "Typing indicators in a chat",
    scope: "typing:read",
    query: ChatStateQuery,
    response: R.page(R.TypingIndicatorSchema, "TypingIndicator"),
    errors: [...LINE_ERRORS, "chat_not_found"],
    handler: ({ actor, query }) => listTyping(actor, query),
  }),
  sendTyping: operation({
    method: "POST",
    path: "/v1/typing",
    tag: "Typing",
    summary: "Start or stop typing",
    scope: "typing:write",
    body: SendTypingBody,
    response: R.AcceptedSchema,
    errors: [...WRITE_ERRORS, "advanced_features_required"],
    example: { from: "+15550001000", to: "+15551230001", state: "on" },
    handler: ({ actor, body, requestId }) => sendTyping(actor, body, requestId),
  }),
  listReceipts: operation({
    method: "GET",
    path: "/v1/receipts",
    tag: "Receipts",
    summary: "Read receipts in a chat",
    scope: "receipts:read",
    query: ChatStateQuery,
    response: R.page(R.ReadReceiptSchema, "ReadReceipt"),
    errors: [...LINE_ERRORS, "chat_not_found"],
    handler: ({ actor, query }) => listReceipts(actor, query),
  }),
  sendReceipt: operation({
    method: "POST",
    path: "/v1/receipts",
    tag: "Receipts",
    summary: "Mark a chat read",
    scope: "receipts:write",
    body: SendReceiptBody,
    response: R.AcceptedSchema,
    errors: [...WRITE_ERRORS, "advanced_features_required"],
    example: { from: "+15550001000", to: "+15551230001" },
    handler: ({ actor, body, requestId }) => sendReceipt(actor, body, requestId),
  }),
  uploadFile: operation({
    method: "POST",
    path: "/v1/files",
    tag: "Files",
    summary: "Upload a file",
    description: "The body is the file's bytes; Content-Type is its type; X-Filename (optional, may be percent-encoded) its name. At most 100 MiB.",
    scope: "files:write",
    upload: { maxBytes: MAX_FILE_BYTES, check: (request) => mimeTypeOf(request.headers.get("content-type")) },
    status: 201,
    response: R.FileSchema,
    errors: ["empty_file", "file_too_large", "invalid_parameter_value", "storage_unavailable"],
    handler: ({ actor, upload, request }) =>
      uploadFile(actor, { blob: upload!, contentType: request.headers.get("content-type"), filename: request.headers.get("x-filename") }),
  }),
  downloadFile: operation({
    method: "GET",
    path: "/v1/files",
    tag: "Files",
    summary: "Download a file",
    description: "302 to a signed URL, valid for one hour.",
    scope: "files:read",
    query: FileQuery,
    redirect: true,
    errors: ["file_not_found", "line_not_accessible", "invalid_parameter_value"],
    handler: async ({ actor, query }) => {
      const url = await fileDownloadUrl(actor, query.id);
      return new Response(null, { status: 302, headers: { Location: url, "Cache-Control": "no-store" } });
    },
  }),
};

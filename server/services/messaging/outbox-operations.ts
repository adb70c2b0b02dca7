import { z } from "zod";
import * as R from "../../wire/responses";
import { LINE_ERRORS, operation } from "../operation";
import { ChatIdQuery, OutboxIdQuery, OutboxQuery } from "../schemas/v1";
import { approveSend, rejectSend } from "./approvals";
import { cancelOutboxItem, getOutboxItem, listOutbox, RescheduleBody, rescheduleOutboxItem } from "./outbox";
import { pauseChat, resumeChat } from "./takeover";

export const OUTBOX_OPERATIONS = {
  getOutbox: operation({
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
    handler: ({ actor, query }) => (query.id ? getOutboxItem(actor, query.id) : listOutbox(actor, query)),
  }),
  cancelOutboxItem: operation({
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
    handler: ({ actor, query }) => cancelOutboxItem(actor, query.id),
  }),
  rescheduleOutboxItem: operation({
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
    handler: ({ actor, query, body }) => rescheduleOutboxItem(actor, query.id, body),
  }),
  approveOutboxItem: operation({
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
    handler: ({ actor, query }) => approveSend(actor, query.id),
  }),
  rejectOutboxItem: operation({
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
    handler: ({ actor, query }) => rejectSend(actor, query.id),
  }),
  pauseChat: operation({
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
    handler: ({ actor, query }) => pauseChat(actor, query.id),
  }),
  resumeChat: operation({
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
    handler: ({ actor, query }) => resumeChat(actor, query.id),
  }),
};

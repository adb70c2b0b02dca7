import type { InputObjectRef } from "@pothos/core";
import type { z } from "zod";
import type { Actor } from "../../../services/access/actor";
import type { Scope } from "../../../services/access/scopes";
import type { OutboxItem as OutboxRow } from "../../../generated/prisma/client";
import {
  MessagePayload,
  OUTBOX_KINDS,
  type OutboxKind,
  ReactionPayload,
  ReceiptPayload,
  TypingPayload,
} from "../../../outbox/payloads";
import { REACTION_TYPES } from "../../../platform/reaction-types";
import { HOLD_REASONS } from "../../../policy/hold-reasons";
import { OutboxIdQuery, OutboxQuery } from "../../../services/schemas/v1";
import { approveSend, rejectSend } from "../../../services/messaging/approvals";
import { cancelOutboxItem, findOutboxItem, OUTBOX_STATUSES, type OutboxStatus as OutboxStatusValue, outboxItemView, outboxWhere, RescheduleBody, rescheduleOutboxItem } from "../../../services/messaging/outbox";
import { SendMessageBody, SendReactionBody, SendReceiptBody, SendTypingBody, sendMessage, sendReaction, sendReceipt, sendTyping } from "../../../services/messaging/send";
import { SendAudioMessageBody, sendAudioMessage } from "../../../services/messaging/send-audio";
import { serializeOutboxItem } from "../../../wire/serializers";
import { builder, type BuilderTypes, type MutationBuilder } from "../builder";
import type { GraphQLContext } from "../context";
import { parseArgs } from "../inputs";

// Outbox items (GET /v1/outbox, outbox:read) and the writes that create them: the mutations
// of POST /v1/messages, /audio-messages, /reactions, /typing and /receipts, each with the
// route's scope, zod schema and service function; and the changes of a pending item
// (DELETE and PATCH /v1/outbox: cancel, reschedule), and the owner's review of a send held for
// approval (POST /v1/outbox/approve and /reject, outbox:approve).
//
// An item waiting on a hold is stored with status `held`, an internal status: like /v1, the
// schema shows it as `pending` with `holdReason` and `notBefore`. Those fields, and status, are
// read from the REST serializer (serializeOutboxItem), so both transports say the same.

export const OutboxStatus = builder.enumType("OutboxStatus", { values: OUTBOX_STATUSES });
const HoldReason = builder.enumType("HoldReason", {
  description:
    "Why a pending item waits: scheduled (sendAt), quiet_hours (the line's quiet hours), new_contact_budget (the line opened as many new conversations as its policy allows for now), line_rate (its turn on a paced provider line), line_unavailable (the line's provider is not answering), approval (sent by a key that requires approval: it waits until the owner approves or rejects it).",
  values: HOLD_REASONS,
});
const OutboxKindEnum = builder.enumType("OutboxKind", { values: OUTBOX_KINDS });
const ReactionType = builder.enumType("ReactionType", { values: REACTION_TYPES });
const TypingState = builder.enumType("TypingState", { values: ["on", "off"] as const });

type Payload =
  | { kind: "message"; p: MessagePayload }
  | { kind: "reaction"; p: ReactionPayload }
  | { kind: "typing"; p: TypingPayload }
  | { kind: "receipt"; p: ReceiptPayload };

function parsePayload(row: Pick<OutboxRow, "kind" | "payload">): Payload {
  const kind = row.kind as OutboxKind;
  switch (kind) {
    case "message":
      return { kind, p: MessagePayload.parse(row.payload) };
    case "reaction":
      return { kind, p: ReactionPayload.parse(row.payload) };
    case "typing":
      return { kind, p: TypingPayload.parse(row.payload) };
    case "receipt":
      return { kind, p: ReceiptPayload.parse(row.payload) };
  }
}

const PAYLOAD_TYPES = {
  message: "MessageOutboxPayload",
  reaction: "ReactionOutboxPayload",
  typing: "TypingOutboxPayload",
  receipt: "ReceiptOutboxPayload",
} as const;

const OutboxPayload = builder.interfaceRef<Payload>("OutboxPayload").implement({
  description: "What the item sends, and to which chat.",
  resolveType: (payload) => PAYLOAD_TYPES[payload.kind],
  fields: (t) => ({
    chatId: t.string({ resolve: ({ p }) => p.chat_id }),
    to: t.string({ description: "The chat identifier the platform sends to.", resolve: ({ p }) => p.to }),
    isGroup: t.boolean({ resolve: ({ p }) => p.is_group }),
  }),
});

builder.objectRef<Extract<Payload, { kind: "message" }>>(PAYLOAD_TYPES.message).implement({
  interfaces: [OutboxPayload],
  fields: (t) => ({
    text: t.string({ nullable: true, resolve: ({ p }) => p.text }),
    attachmentIds: t.stringList({ resolve: ({ p }) => p.attachments }),
    replyToGuid: t.string({ nullable: true, resolve: ({ p }) => p.reply_to_guid }),
    isAudioMessage: t.boolean({ resolve: ({ p }) => p.is_audio_message }),
  }),
});
builder.objectRef<Extract<Payload, { kind: "reaction" }>>(PAYLOAD_TYPES.reaction).implement({
  interfaces: [OutboxPayload],
  fields: (t) => ({
    messageId: t.string({ resolve: ({ p }) => p.message_id }),
    messageGuid: t.string({ resolve: ({ p }) => p.message_guid }),
    added: t.boolean({ description: "false: the item removes the reaction.", resolve: ({ p }) => p.added }),
    type: t.string({ resolve: ({ p }) => p.type }),
  }),
});
builder.objectRef<Extract<Payload, { kind: "typing" }>>(PAYLOAD_TYPES.typing).implement({
  interfaces: [OutboxPayload],
  fields: (t) => ({ isTyping: t.boolean({ resolve: ({ p }) => p.is_typing }) }),
});
builder.objectRef<Extract<Payload, { kind: "receipt" }>>(PAYLOAD_TYPES.receipt).implement({
  interfaces: [OutboxPayload],
  fields: () => ({}),
});

/**
 * The item as GET /v1/outbox shows it (with line_rate and line_unavailable, read from its
 * line), once per row however many of its fields are selected.
 */
const wireViews = new WeakMap<OutboxRow, ReturnType<typeof outboxItemView>>();
function view(row: OutboxRow) {
  let v = wireViews.get(row);
  if (!v) wireViews.set(row, (v = outboxItemView(row)));
  return v;
}
/** The same without reading the line, for the fields that do not depend on it. */
const plainViews = new WeakMap<OutboxRow, ReturnType<typeof serializeOutboxItem>>();
function wire(row: OutboxRow) {
  let v = plainViews.get(row);
  if (!v) plainViews.set(row, (v = serializeOutboxItem(row)));
  return v;
}

// The type selects whole rows (no `select` option), so a field's parent is the row serializeOutboxItem reads.
const OutboxItem = builder.prismaObject("OutboxItem", {
  fields: (t) => ({
    id: t.exposeID("id"),
    lineId: t.exposeString("lineId"),
    line: t.relation("line", { authScopes: { scope: "lines:read" } }),
    kind: t.field({ type: OutboxKindEnum, resolve: (o) => o.kind as OutboxKind }),
    status: t.field({
      type: OutboxStatus,
      description: "pending until claimed for delivery (also while held: see holdReason), then claimed, and sent or failed.",
      resolve: async (o) => (await view(o)).status as OutboxStatusValue,
    }),
    holdReason: t.field({
      type: HoldReason,
      nullable: true,
      description: "Why a pending item waits; null when it is due (or no longer pending).",
      resolve: async (o) => (await view(o)).hold_reason,
    }),
    notBefore: t.field({
      type: "Timestamp",
      nullable: true,
      description: "While held: the earliest time it may go (a schedule's sendAt, the end of quiet hours, a budget slot). Null when it is due, or when only a person or a policy change releases it.",
      resolve: async (o) => (await view(o)).not_before,
    }),
    canceledAt: t.field({
      type: "Timestamp",
      nullable: true,
      description: "When cancelOutboxItem canceled it (the item is then failed with error \"canceled\").",
      resolve: (o) => wire(o).canceled_at,
    }),
    poolId: t.string({ nullable: true, description: "The pool_ ID the send was addressed from, when `from` was a pool (lineId is the line chosen).", resolve: (o) => wire(o).pool_id }),
    fallback: t.boolean({ description: "Whether the message went as SMS because the recipient cannot receive iMessage (SMS fallback).", resolve: (o) => wire(o).fallback }),
    error: t.exposeString("error", { nullable: true, description: "Why the item failed (or why its last attempt did)." }),
    attempts: t.exposeInt("attempts"),
    maxAttempts: t.exposeInt("maxAttempts"),
    createdAt: t.expose("createdAt", { type: "Timestamp" }),
    completedAt: t.expose("completedAt", { type: "Timestamp", nullable: true }),
    segments: t.exposeInt("segments", { nullable: true, description: "How many SMS segments the provider split the text into, when it reported it." }),
    payload: t.field({ type: OutboxPayload, select: { kind: true, payload: true }, resolve: parsePayload }),
    message: t.prismaField({
      type: "Message",
      nullable: true,
      description: "The message this item sent, once it is sent (message items only).",
      authScopes: { scope: "messages:read" },
      select: { kind: true },
      resolve: (query, o, _args, ctx) => {
        const loader = ctx.loaders.messageByOutboxId(query);
        return o.kind === "message" ? loader.load(o.id) : null;
      },
    }),
  }),
});

const OutboxItemConnection = builder.connectionObject({ type: OutboxItem, name: "OutboxItemConnection" }, { name: "OutboxItemEdge" });

builder.queryFields((t) => ({
  outboxItem: t.prismaField({
    type: "OutboxItem",
    nullable: true,
    description: "One outbox item by obx_ ID: poll it to follow a write's delivery.",
    authScopes: { scope: "outbox:read" },
    args: { id: t.arg.string({ required: true }) },
    resolve: async (query, _root, args, ctx) => {
      const { id } = parseArgs(OutboxQuery, args);
      return ctx.prisma.outboxItem.findUniqueOrThrow({ ...query, where: { id: (await findOutboxItem(ctx.actor, id!)).id } });
    },
  }),
  outbox: t.prismaConnection(
    {
      type: "OutboxItem",
      cursor: "id",
      description:
        "Recent outbox items (a key with guardrails: its own sends), newest first, optionally of one line and in one status (pending includes held items), or held for one reason (holdReason approval: the sends waiting for the owner). line_rate and line_unavailable are read from the line, not stored: they are not filters.",
      authScopes: { scope: "outbox:read" },
      args: { from: t.arg.string(), status: t.arg({ type: OutboxStatus }), holdReason: t.arg({ type: HoldReason }) },
      resolve: async (query, _root, args, ctx) => {
        return ctx.prisma.outboxItem.findMany({
          ...query,
          where: await outboxWhere(ctx.actor, parseArgs(OutboxQuery, args)),
          orderBy: { id: "desc" },
        });
      },
    },
    OutboxItemConnection,
  ),
}));

/** The item a write just stored (or changed), with what the operation selects beneath it. */
const accepted = (ctx: GraphQLContext, query: object, item: { id: string }) =>
  ctx.prisma.outboxItem.findUniqueOrThrow({ ...query, where: { id: item.id } });

const chatTarget = {
  from: { description: "The sending line: handle or ln_ ID." },
  /** Messages and voice memos may also go from a pool. */
  fromPool: { description: "The sending line: handle or ln_ ID; or a pool_ ID, whose line is chosen per contact (outbox item's poolId)." },
  to: { description: "A phone number, account ID or cht_ chat ID." },
};

const SEND_AT =
  "Schedules the send: a time in the future, at most 365 days ahead. The item is pending, with holdReason scheduled and notBefore this time, until then (cancelOutboxItem, rescheduleOutboxItem).";

const SendMessageInput = builder.inputType("SendMessageInput", {
  fields: (t) => ({
    from: t.string({ required: true, ...chatTarget.fromPool }),
    to: t.string({ required: true, ...chatTarget.to }),
    text: t.string(),
    attachments: t.stringList({ description: "At most one file_ ID (uploadFile)." }),
    replyTo: t.string({ description: "msg_ ID or GUID of a message in the same chat." }),
    sendAt: t.field({ type: "Timestamp", description: SEND_AT }),
  }),
});
const SendAudioMessageInput = builder.inputType("SendAudioMessageInput", {
  fields: (t) => ({
    from: t.string({ required: true, ...chatTarget.fromPool }),
    to: t.string({ required: true, ...chatTarget.to }),
    audioMessage: t.string({ required: true, description: "file_ ID of an uploaded m4a, mp3, wav, caf or aiff recording." }),
    replyTo: t.string(),
    sendAt: t.field({ type: "Timestamp", description: SEND_AT }),
  }),
});
const SendReactionInput = builder.inputType("SendReactionInput", {
  fields: (t) => ({
    from: t.string({ required: true, ...chatTarget.from }),
    to: t.string({ required: true, ...chatTarget.to }),
    messageId: t.string({ required: true, description: "msg_ ID or GUID of a message in that chat." }),
    type: t.field({ type: ReactionType, required: true }),
    remove: t.boolean({ description: "true removes the line's earlier reaction of this type instead of adding one." }),
  }),
});
const SendTypingInput = builder.inputType("SendTypingInput", {
  fields: (t) => ({
    from: t.string({ required: true, ...chatTarget.from }),
    to: t.string({ required: true, ...chatTarget.to }),
    state: t.field({ type: TypingState, description: "on (default) starts typing, off stops." }),
  }),
});
const SendReceiptInput = builder.inputType("SendReceiptInput", {
  fields: (t) => ({
    from: t.string({ required: true, ...chatTarget.from }),
    to: t.string({ required: true, ...chatTarget.to }),
  }),
});

/** A write of /v1 as a mutation: the route's scope, zod schema and service; answers the stored item. */
function sendMutation<S extends z.ZodType>(
  t: MutationBuilder,
  options: {
    description: string;
    scope: Scope;
    input: InputObjectRef<BuilderTypes, object>;
    schema: S;
    send: (actor: Actor, input: z.output<S>, requestId: string) => Promise<{ id: string }>;
  },
) {
  return t.prismaField({
    type: "OutboxItem",
    description: options.description,
    authScopes: { scope: options.scope },
    args: { input: t.arg({ type: options.input, required: true }) },
    resolve: async (query, _root, args, ctx) =>
      accepted(ctx, query, await options.send(ctx.actor, parseArgs(options.schema, args.input), ctx.requestId)),
  });
}

builder.mutationFields((t) => ({
  sendMessage: sendMutation(t, {
    description: "POST /v1/messages: text and/or one attachment. The item is pending until delivered.",
    scope: "messages:write",
    input: SendMessageInput,
    schema: SendMessageBody,
    send: sendMessage,
  }),
  sendAudioMessage: sendMutation(t, {
    description: "POST /v1/audio-messages: an uploaded recording, converted and sent as a voice memo.",
    scope: "messages:write",
    input: SendAudioMessageInput,
    schema: SendAudioMessageBody,
    send: sendAudioMessage,
  }),
  sendReaction: sendMutation(t, {
    description: "POST /v1/reactions (advanced features).",
    scope: "reactions:write",
    input: SendReactionInput,
    schema: SendReactionBody,
    send: sendReaction,
  }),
  sendTyping: sendMutation(t, {
    description: "POST /v1/typing: start or stop typing in a one-to-one chat (advanced features).",
    scope: "typing:write",
    input: SendTypingInput,
    schema: SendTypingBody,
    send: sendTyping,
  }),
  sendReceipt: sendMutation(t, {
    description: "POST /v1/receipts: mark the chat read (advanced features).",
    scope: "receipts:write",
    input: SendReceiptInput,
    schema: SendReceiptBody,
    send: sendReceipt,
  }),
}));

builder.mutationFields((t) => ({
  cancelOutboxItem: t.prismaField({
    type: "OutboxItem",
    description:
      "DELETE /v1/outbox?id=: cancels a pending item (scheduled, held or waiting its turn); it ends failed with error \"canceled\" and canceledAt set. An item already claimed, sent or failed, or approved to go now, is outbox_item_not_cancelable. A key with guardrails cancels only its own sends.",
    authScopes: { scope: "messages:write" },
    args: { id: t.arg.string({ required: true, description: "obx_ ID." }) },
    resolve: async (query, _root, args, ctx) => {
      const { id } = parseArgs(OutboxIdQuery, args);
      return accepted(ctx, query, await cancelOutboxItem(ctx.actor, id));
    },
  }),
  rescheduleOutboxItem: t.prismaField({
    type: "OutboxItem",
    description:
      "PATCH /v1/outbox?id=: moves a pending item's send to sendAt (in the future, at most 365 days ahead); it is held with holdReason scheduled until then. An item already claimed, sent or failed is outbox_item_not_reschedulable. A key with guardrails reschedules only its own sends.",
    authScopes: { scope: "messages:write" },
    args: {
      id: t.arg.string({ required: true, description: "obx_ ID." }),
      sendAt: t.arg({ type: "Timestamp", required: true }),
    },
    resolve: async (query, _root, { id, sendAt }, ctx) => {
      const item = parseArgs(OutboxIdQuery, { id });
      return accepted(ctx, query, await rescheduleOutboxItem(ctx.actor, item.id, parseArgs(RescheduleBody, { sendAt })));
    },
  }),
}));

builder.mutationFields((t) => ({
  approveOutboxItem: t.prismaField({
    type: "OutboxItem",
    description:
      "POST /v1/outbox/approve?id=: approves a send waiting for approval (holdReason approval); it goes now, or at the sendAt it asked for. An item no longer waiting is outbox_item_not_reviewable.",
    authScopes: { scope: "outbox:approve" },
    args: { id: t.arg.string({ required: true, description: "obx_ ID." }) },
    resolve: async (query, _root, args, ctx) => {
      const { id } = parseArgs(OutboxIdQuery, args);
      return accepted(ctx, query, await approveSend(ctx.actor, id));
    },
  }),
  rejectOutboxItem: t.prismaField({
    type: "OutboxItem",
    description:
      "POST /v1/outbox/reject?id=: rejects a send waiting for approval; it ends failed with error \"rejected\" and never goes. An item no longer waiting is outbox_item_not_reviewable.",
    authScopes: { scope: "outbox:approve" },
    args: { id: t.arg.string({ required: true, description: "obx_ ID." }) },
    resolve: async (query, _root, args, ctx) => {
      const { id } = parseArgs(OutboxIdQuery, args);
      return accepted(ctx, query, await rejectSend(ctx.actor, id));
    },
  }),
}));

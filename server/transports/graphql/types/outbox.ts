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
import { REACTION_TYPES } from "../../../platform/events";
import { OutboxQuery } from "../../../services/schemas/v1";
import { resolveLine } from "../../../services/lines/lines";
import { findOutboxItem, OUTBOX_STATUSES } from "../../../services/messaging/outbox";
import { SendMessageBody, SendReactionBody, SendReceiptBody, SendTypingBody, sendMessage, sendReaction, sendReceipt, sendTyping } from "../../../services/messaging/send";
import { SendAudioMessageBody, sendAudioMessage } from "../../../services/messaging/send-audio";
import { whereForActor, whereOnLine } from "../../../services/lines/tenancy";
import { builder, type BuilderTypes, type MutationBuilder } from "../builder";
import type { GraphQLContext } from "../context";
import { parseArgs } from "../inputs";

// Outbox items (GET /v1/outbox, outbox:read) and the writes that create them: the mutations
// of POST /v1/messages, /audio-messages, /reactions, /typing and /receipts, each with the
// route's scope, zod schema and service function.

export const OutboxStatus = builder.enumType("OutboxStatus", { values: OUTBOX_STATUSES });
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

const OutboxItem = builder.prismaObject("OutboxItem", {
  fields: (t) => ({
    id: t.exposeID("id"),
    lineId: t.exposeString("lineId"),
    line: t.relation("line", { authScopes: { scope: "lines:read" } }),
    kind: t.field({ type: OutboxKindEnum, resolve: (o) => o.kind as OutboxKind }),
    status: t.field({ type: OutboxStatus, resolve: (o) => o.status as (typeof OUTBOX_STATUSES)[number] }),
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
      description: "Recent outbox items, newest first, optionally of one line and in one status.",
      authScopes: { scope: "outbox:read" },
      args: { from: t.arg.string(), status: t.arg({ type: OutboxStatus }) },
      resolve: async (query, _root, args, ctx) => {
        const input = parseArgs(OutboxQuery, args);
        const where = input.from ? whereOnLine(ctx.actor, await resolveLine(ctx.actor, input.from)) : await whereForActor(ctx.actor);
        return ctx.prisma.outboxItem.findMany({
          ...query,
          where: { ...where, ...(input.status ? { status: input.status } : {}) },
          orderBy: { id: "desc" },
        });
      },
    },
    OutboxItemConnection,
  ),
}));

/** The item a write just stored, with what the operation selects beneath it. */
const accepted = (ctx: GraphQLContext, query: object, item: { id: string }) =>
  ctx.prisma.outboxItem.findUniqueOrThrow({ ...query, where: { id: item.id } });

const chatTarget = {
  from: { description: "The sending line: handle or ln_ ID." },
  to: { description: "A phone number, account ID or cht_ chat ID." },
};

const SendMessageInput = builder.inputType("SendMessageInput", {
  fields: (t) => ({
    from: t.string({ required: true, ...chatTarget.from }),
    to: t.string({ required: true, ...chatTarget.to }),
    text: t.string(),
    attachments: t.stringList({ description: "At most one file_ ID (uploadFile)." }),
    replyTo: t.string({ description: "msg_ ID or GUID of a message in the same chat." }),
  }),
});
const SendAudioMessageInput = builder.inputType("SendAudioMessageInput", {
  fields: (t) => ({
    from: t.string({ required: true, ...chatTarget.from }),
    to: t.string({ required: true, ...chatTarget.to }),
    audioMessage: t.string({ required: true, description: "file_ ID of an uploaded m4a, mp3, wav, caf or aiff recording." }),
    replyTo: t.string(),
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

import type { Prisma } from "../../../generated/prisma/client";
import { ChatIdQuery, ChatStateQuery, ListChatsQuery } from "../../../services/schemas/v1";
import { resolveChat } from "../../../services/messaging/chats";
import { pauseChat, resumeChat } from "../../../services/messaging/takeover";
import { resolveLine } from "../../../services/lines/lines";
import { whereOnLine } from "../../../services/lines/tenancy";
import { serializeTyping } from "../../../wire/serializers";
import { builder } from "../builder";
import type { GraphQLContext } from "../context";
import { parseArgs } from "../inputs";
import { MESSAGE_ORDER, MessageConnection } from "./messages";

// Chat: GET /v1/chats (chats:read); its messages, typing indicators (GET /v1/typing) and read
// receipts (GET /v1/receipts), each under its own read scope. Human takeover (POST
// /v1/chats/pause and /resume, outbox:approve): pauseChat and resumeChat.

export const CHAT_ORDER: Prisma.ChatOrderByWithRelationInput[] = [{ lastMessageAt: { sort: "desc", nulls: "last" } }, { id: "desc" }];

const Chat = builder.prismaObject("Chat", {
  fields: (t) => ({
    id: t.exposeID("id"),
    lineId: t.exposeString("lineId"),
    line: t.relation("line", { authScopes: { scope: "lines:read" } }),
    identifier: t.exposeString("identifier"),
    service: t.exposeString("service"),
    name: t.exposeString("name", { nullable: true }),
    isGroup: t.exposeBoolean("isGroup"),
    participants: t.exposeStringList("participants"),
    hasReceivedInbound: t.exposeBoolean("hasReceivedInbound"),
    lastMessageAt: t.expose("lastMessageAt", { type: "Timestamp", nullable: true }),
    createdAt: t.expose("createdAt", { type: "Timestamp" }),
    pausedAt: t.expose("pausedAt", {
      type: "Timestamp",
      nullable: true,
      description: "Since when the owner has taken the chat over (pauseChat): sends by keys with guardrails are refused with chat_paused. Null: not paused.",
    }),
    pausedBy: t.exposeString("pausedBy", { nullable: true, description: "Who paused it: the signed-in user's ID or the key_ ID." }),
    messages: t.relatedConnection(
      "messages",
      {
        description: "Messages of the chat, newest first.",
        cursor: "id",
        authScopes: { scope: "messages:read" },
        query: { orderBy: MESSAGE_ORDER },
      },
      MessageConnection,
    ),
    typing: t.relatedConnection(
      "typing",
      { cursor: "id", authScopes: { scope: "typing:read" }, query: { orderBy: { id: "asc" } } },
      TypingIndicatorConnection,
    ),
    receipts: t.relatedConnection(
      "receipts",
      { cursor: "id", authScopes: { scope: "receipts:read" }, query: { orderBy: { id: "asc" } } },
      ReadReceiptConnection,
    ),
  }),
});

export const ChatConnection = builder.connectionObject({ type: Chat, name: "ChatConnection" }, { name: "ChatEdge" });

const TypingIndicator = builder.prismaObject("TypingIndicator", {
  fields: (t) => ({
    id: t.exposeID("id"),
    chatId: t.exposeString("chatId"),
    handle: t.exposeString("handle"),
    isTyping: t.boolean({
      description: "False once 60 s have passed since the last report, as in GET /v1/typing.",
      resolve: (typing) => serializeTyping(typing).is_typing,
    }),
    updatedAt: t.expose("updatedAt", { type: "Timestamp" }),
  }),
});

const ReadReceipt = builder.prismaObject("ReadReceipt", {
  fields: (t) => ({
    id: t.exposeID("id"),
    chatId: t.exposeString("chatId"),
    handle: t.exposeString("handle"),
    lastReadAt: t.expose("lastReadAt", { type: "Timestamp" }),
    syncedAt: t.expose("syncedAt", { type: "Timestamp" }),
  }),
});

const TypingIndicatorConnection = builder.connectionObject(
  { type: TypingIndicator, name: "TypingIndicatorConnection" },
  { name: "TypingIndicatorEdge" },
);
const ReadReceiptConnection = builder.connectionObject({ type: ReadReceipt, name: "ReadReceiptConnection" }, { name: "ReadReceiptEdge" });

/** The chat named by from and to, after the same checks as GET /v1/typing and /v1/receipts. */
async function chatOf(ctx: GraphQLContext, args: { from: string; to: string }) {
  const { from, to } = parseArgs(ChatStateQuery, args);
  return resolveChat(ctx.actor, await resolveLine(ctx.actor, from), to);
}

builder.queryFields((t) => ({
  chats: t.prismaConnection(
    {
      type: "Chat",
      cursor: "id",
      description: "Chats of a line (handle or ln_ ID), most recent activity first.",
      authScopes: { scope: "chats:read" },
      args: { from: t.arg.string({ required: true }) },
      resolve: async (query, _root, args, ctx) => {
        const { from } = parseArgs(ListChatsQuery, args);
        const line = await resolveLine(ctx.actor, from);
        return ctx.prisma.chat.findMany({ ...query, where: whereOnLine(ctx.actor, line), orderBy: CHAT_ORDER });
      },
    },
    ChatConnection,
  ),
  chat: t.prismaField({
    type: "Chat",
    nullable: true,
    description: "One chat of a line: `to` is a cht_ ID, phone number or account ID.",
    authScopes: { scope: "chats:read" },
    args: { from: t.arg.string({ required: true }), to: t.arg.string({ required: true }) },
    resolve: async (query, _root, args, ctx) =>
      ctx.prisma.chat.findUniqueOrThrow({ ...query, where: { id: (await chatOf(ctx, args)).id } }),
  }),
  typing: t.prismaConnection(
    {
      type: "TypingIndicator",
      cursor: "id",
      description: "Typing indicators in one chat (GET /v1/typing).",
      authScopes: { scope: "typing:read" },
      args: { from: t.arg.string({ required: true }), to: t.arg.string({ required: true }) },
      resolve: async (query, _root, args, ctx) =>
        ctx.prisma.typingIndicator.findMany({ ...query, where: { chatId: (await chatOf(ctx, args)).id }, orderBy: { id: "asc" } }),
    },
    TypingIndicatorConnection,
  ),
  receipts: t.prismaConnection(
    {
      type: "ReadReceipt",
      cursor: "id",
      description: "Read receipts in one chat (GET /v1/receipts).",
      authScopes: { scope: "receipts:read" },
      args: { from: t.arg.string({ required: true }), to: t.arg.string({ required: true }) },
      resolve: async (query, _root, args, ctx) =>
        ctx.prisma.readReceipt.findMany({ ...query, where: { chatId: (await chatOf(ctx, args)).id }, orderBy: { id: "asc" } }),
    },
    ReadReceiptConnection,
  ),
}));

builder.mutationFields((t) => ({
  pauseChat: t.prismaField({
    type: "Chat",
    description:
      "POST /v1/chats/pause?id=: a person takes the chat over. Sends to it by keys with guardrails are refused with chat_paused until resumeChat; the owner's own sends still go. Pausing a paused chat keeps pausedAt and pausedBy.",
    authScopes: { scope: "outbox:approve" },
    args: { id: t.arg.string({ required: true, description: "cht_ ID." }) },
    resolve: async (query, _root, args, ctx) => {
      const { id } = parseArgs(ChatIdQuery, args);
      await pauseChat(ctx.actor, id);
      return ctx.prisma.chat.findUniqueOrThrow({ ...query, where: { id } });
    },
  }),
  resumeChat: t.prismaField({
    type: "Chat",
    description: "POST /v1/chats/resume?id=: hands a paused chat back to automated senders (pausedAt and pausedBy become null).",
    authScopes: { scope: "outbox:approve" },
    args: { id: t.arg.string({ required: true, description: "cht_ ID." }) },
    resolve: async (query, _root, args, ctx) => {
      const { id } = parseArgs(ChatIdQuery, args);
      await resumeChat(ctx.actor, id);
      return ctx.prisma.chat.findUniqueOrThrow({ ...query, where: { id } });
    },
  }),
}));

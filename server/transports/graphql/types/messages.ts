import type { Prisma } from "../../../generated/prisma/client";
import { ListMessagesQuery, ListReactionsQuery, SearchMessagesQuery } from "../../../services/schemas/v1";
import { resolveChat } from "../../../services/messaging/chats";
import { resolveLine } from "../../../services/lines/lines";
import { findMessage } from "../../../services/messaging/messages";
import { searchMessageRows } from "../../../services/messaging/search";
import { whereOnLine } from "../../../services/lines/tenancy";
import { builder } from "../builder";
import { parseArgs } from "../inputs";

// Message (GET /v1/messages, messages:read) with its attachments, the message it replies to
// and its reactions (GET /v1/reactions, reactions:read).

export const MESSAGE_ORDER: Prisma.MessageOrderByWithRelationInput[] = [{ sentAt: "desc" }, { id: "desc" }];
const REACTION_ORDER: Prisma.ReactionOrderByWithRelationInput[] = [{ sentAt: "desc" }, { id: "desc" }];

builder.prismaObject("Attachment", {
  fields: (t) => ({
    id: t.exposeID("id"),
    fileId: t.exposeString("fileId"),
    filename: t.exposeString("filename"),
    mimeType: t.exposeString("mimeType"),
    size: t.exposeInt("size", { description: "Bytes." }),
    url: t.string({
      description: "A signed download link, valid for one hour.",
      select: { fileId: true },
      resolve: async (a, _args, ctx) => (await ctx.fileUrl())(a.fileId),
    }),
    transcription: t.exposeString("transcription", { nullable: true }),
  }),
});

const Reaction = builder.prismaObject("Reaction", {
  fields: (t) => ({
    id: t.exposeID("id"),
    messageId: t.exposeString("messageId"),
    message: t.relation("message", { authScopes: { scope: "messages:read" } }),
    chatId: t.exposeString("chatId"),
    type: t.exposeString("type", { description: "love, like, dislike, laugh, emphasize or question." }),
    sender: t.exposeString("sender"),
    isFromMe: t.exposeBoolean("isFromMe"),
    added: t.exposeBoolean("added", { description: "False once the reaction was removed." }),
    sentAt: t.expose("sentAt", { type: "Timestamp" }),
    syncedAt: t.expose("syncedAt", { type: "Timestamp" }),
  }),
});

const ReactionConnection = builder.connectionObject({ type: Reaction, name: "ReactionConnection" }, { name: "ReactionEdge" });

const Message = builder.prismaObject("Message", {
  fields: (t) => ({
    id: t.exposeID("id"),
    lineId: t.exposeString("lineId"),
    line: t.relation("line", { authScopes: { scope: "lines:read" } }),
    chatId: t.exposeString("chatId"),
    chat: t.relation("chat", { authScopes: { scope: "chats:read" } }),
    guid: t.exposeString("guid"),
    sender: t.exposeString("sender"),
    text: t.exposeString("text", { nullable: true }),
    attachments: t.relation("attachments", { query: { orderBy: { position: "asc" } } }),
    isFromMe: t.exposeBoolean("isFromMe"),
    isAudioMessage: t.exposeBoolean("isAudioMessage", { nullable: true }),
    service: t.exposeString("service", { nullable: true }),
    outboxId: t.exposeString("outboxId", { nullable: true }),
    sentAt: t.expose("sentAt", { type: "Timestamp" }),
    syncedAt: t.expose("syncedAt", { type: "Timestamp" }),
    replyToGuid: t.exposeString("replyToGuid", { nullable: true }),
    deliveryStatus: t.exposeString("deliveryStatus", {
      nullable: true,
      description:
        "Outgoing messages on lines whose provider reports delivery (SMS Gateway, Twilio): sent, then delivered, undelivered or failed (a final state is never left). Null for incoming messages and other lines.",
    }),
    deliveredAt: t.expose("deliveredAt", { type: "Timestamp", nullable: true, description: "When the provider reported the message delivered." }),
    deliveryError: t.exposeString("deliveryError", { nullable: true, description: "The provider's error code and reason when undelivered or failed." }),
    fallback: t.boolean({
      description: "Whether the message went as SMS because the recipient cannot receive iMessage (SMS fallback).",
      resolve: (m) => m.fallback ?? false,
    }),
    replyTo: t.prismaField({
      type: "Message",
      nullable: true,
      description: "The message this one replies to, when it is stored in the same chat.",
      resolve: async (query, message, _args, ctx) => {
        const loader = ctx.loaders.messageInChatByGuid(query); // first: Pothos requires the query to be used
        if (!message.replyToGuid) return null;
        return loader.load(`${message.chatId} ${message.replyToGuid}`);
      },
    }),
    reactions: t.relatedConnection(
      "reactions",
      { cursor: "id", authScopes: { scope: "reactions:read" }, query: { orderBy: REACTION_ORDER } },
      ReactionConnection,
    ),
  }),
});

export const MessageConnection = builder.connectionObject({ type: Message, name: "MessageConnection" }, { name: "MessageEdge" });

const MessageSearchPage = builder.objectRef<Awaited<ReturnType<typeof searchMessageRows>>>("MessageSearchPage").implement({
  description: "A page of searchMessages: the list envelope of GET /v1/messages?query=.",
  fields: (t) => ({
    messages: t.field({ type: [Message], description: "Newest first.", resolve: (page) => page.data }),
    hasMore: t.exposeBoolean("has_more"),
    nextCursor: t.exposeString("next_cursor", { nullable: true, description: "Pass as `cursor` for the next page." }),
  }),
});

builder.queryFields((t) => ({
  searchMessages: t.field({
    type: MessageSearchPage,
    description:
      "Messages whose text matches `query` (words, \"a phrase\", -word, or; whole words, any language, no stemming), newest first: of every line the caller may read, of one line (`from`) or of one chat (`to`: cht_ ID, or a contact of `from`). GET /v1/messages?query= is the same search.",
    authScopes: { scope: "messages:read" },
    args: {
      query: t.arg.string({ required: true }),
      from: t.arg.string(),
      to: t.arg.string(),
      limit: t.arg.int({ description: "1 to 100, default 50." }),
      cursor: t.arg.string(),
    },
    resolve: (_root, args, ctx) => {
      const input = parseArgs(SearchMessagesQuery, args);
      return searchMessageRows(ctx.actor, { query: input.query, line: input.from, chat: input.to, limit: input.limit, cursor: input.cursor });
    },
  }),
  messages: t.prismaConnection(
    {
      type: "Message",
      cursor: "id",
      description: "Messages of a line, or of one chat of it (`to`: cht_ ID, phone number or account ID), newest first.",
      authScopes: { scope: "messages:read" },
      args: { from: t.arg.string({ required: true }), to: t.arg.string() },
      resolve: async (query, _root, args, ctx) => {
        const input = parseArgs(ListMessagesQuery, args);
        const line = await resolveLine(ctx.actor, input.from!);
        const chat = input.to ? await resolveChat(ctx.actor, line, input.to) : null;
        return ctx.prisma.message.findMany({
          ...query,
          where: { ...whereOnLine(ctx.actor, line), ...(chat ? { chatId: chat.id } : {}) },
          orderBy: MESSAGE_ORDER,
        });
      },
    },
    MessageConnection,
  ),
  message: t.prismaField({
    type: "Message",
    nullable: true,
    description: "One message by msg_ ID or platform GUID.",
    authScopes: { scope: "messages:read" },
    args: { id: t.arg.string({ required: true }) },
    resolve: async (query, _root, args, ctx) => {
      const { id } = parseArgs(ListMessagesQuery, args);
      const message = await findMessage(ctx.actor, id!, "id");
      return ctx.prisma.message.findUniqueOrThrow({ ...query, where: { id: message.id } });
    },
  }),
  reactions: t.prismaConnection(
    {
      type: "Reaction",
      cursor: "id",
      description: "Reactions on one message (msg_ ID or GUID), newest first; one per person and type.",
      authScopes: { scope: "reactions:read" },
      args: { messageId: t.arg.string({ required: true }) },
      resolve: async (query, _root, args, ctx) => {
        const input = parseArgs(ListReactionsQuery, args);
        const message = await findMessage(ctx.actor, input.message_id, "message_id");
        return ctx.prisma.reaction.findMany({ ...query, where: { messageId: message.id }, orderBy: REACTION_ORDER });
      },
    },
    ReactionConnection,
  ),
}));

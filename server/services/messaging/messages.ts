import type { Actor } from "../access/actor";
import { getDb } from "../../db";
import { ApiError } from "../../kernel/errors";
import type { Message } from "../../generated/prisma/client";
import { keysetDesc, type Page, toPage } from "../../wire/pagination";
import { serializeMessage, serializeReaction } from "../../wire/serializers";
import { fileUrlSigner } from "../../storage/signed-urls";
import { getChat, resolveChat } from "./chats";
import { rejectForeignId } from "../access/id-params";
import { assertLineIdAccess, resolveLine } from "../lines/lines";
import { whereOnLine } from "../lines/tenancy";
import { searchMessages } from "./search";

export type MessageJson = ReturnType<typeof serializeMessage>;

/** A GUID is unique per line, so one account may hold it on several: the one in `inChat` wins. */
export async function findMessage(actor: Actor, ref: string, param: string, inChat?: string): Promise<Message> {
  const db = await getDb();
  const value = ref.trim();
  rejectForeignId(value, "message", param);
  const message = value.startsWith("msg_")
    ? await db.message.findFirst({ where: { id: value, accountId: actor.accountId } })
    : ((inChat ? await db.message.findFirst({ where: { guid: value, accountId: actor.accountId, chatId: inChat } }) : null) ??
      (await db.message.findFirst({ where: { guid: value, accountId: actor.accountId }, orderBy: { id: "asc" } })));
  if (!message) throw new ApiError("message_not_found", `No message with ID or GUID '${value}'.`, { param });
  await assertLineIdAccess(actor, message.lineId);
  return message;
}

export async function getMessage(actor: Actor, id: string): Promise<MessageJson> {
  const db = await getDb();
  const message = await findMessage(actor, id, "id");
  const full = await db.message.findUniqueOrThrow({ where: { id: message.id }, include: { attachments: true } });
  return serializeMessage(full, await fileUrlSigner());
}

export async function listMessages(
  actor: Actor,
  input: { from: string; to?: string; limit: number; cursor?: string; fromMe?: boolean; query?: string },
): Promise<Page<MessageJson>> {
  if (input.query !== undefined) {
    return searchMessages(actor, { query: input.query, line: input.from, chat: input.to, limit: input.limit, cursor: input.cursor });
  }
  const line = await resolveLine(actor, input.from);
  const chat = input.to ? await resolveChat(actor, line, input.to) : null;
  const db = await getDb();
  const page = keysetDesc("sentAt", input.cursor);
  const rows = await db.message.findMany({
    where: {
      ...whereOnLine(actor, line),
      ...(chat ? { chatId: chat.id } : {}),
      ...(input.fromMe !== undefined ? { isFromMe: input.fromMe } : {}),
      ...page.where,
    },
    orderBy: page.orderBy,
    include: { attachments: true },
    take: input.limit + 1,
  });
  const url = await fileUrlSigner();
  return toPage(rows, input.limit, (m) => serializeMessage(m, url), (m) => [m.sentAt.getTime(), m.id]);
}

/** Three queries whatever the page size. */
export async function listConversation(actor: Actor, input: { chat_id: string; limit: number; cursor?: string }) {
  const chat = await getChat(actor, input.chat_id);
  const db = await getDb();
  const page = keysetDesc("sentAt", input.cursor);
  const rows = await db.message.findMany({
    where: { chatId: chat.id, accountId: actor.accountId, ...page.where },
    orderBy: page.orderBy,
    include: { attachments: true },
    take: input.limit + 1,
  });
  const shown = rows.slice(0, input.limit);
  const guids = [...new Set(shown.map((m) => m.replyToGuid).filter((g): g is string => g !== null))];
  const [reactions, parents] = await Promise.all([
    db.reaction.findMany({ where: { messageId: { in: shown.map((m) => m.id) }, added: true }, orderBy: { sentAt: "asc" } }),
    db.message.findMany({ where: { chatId: chat.id, guid: { in: guids } }, select: { guid: true, id: true, text: true } }),
  ]);
  const url = await fileUrlSigner();
  const parentByGuid = new Map(parents.map((p) => [p.guid, p]));
  const result = toPage(rows, input.limit, (m) => ({
    ...serializeMessage(m, url),
    reactions: reactions.filter((r) => r.messageId === m.id).map(serializeReaction),
    reply_to: m.replyToGuid ? (parentByGuid.get(m.replyToGuid) ?? null) : null,
  }), (m) => [m.sentAt.getTime(), m.id]);
  return { chat, ...result };
}

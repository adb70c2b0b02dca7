import type { Actor } from "../access/actor";
import { getDb, sql } from "../../db";
import { ApiError, invalidParam } from "../../kernel/errors";
import type { Chat, Line } from "../../generated/prisma/client";
import { isPhoneNumber, normalizeHandle } from "../../kernel/handles";
import { ensureDirectChat } from "../../messages/chat-rows";
import { keysetDesc, type Page, toPage } from "../../wire/pagination";
import { serializeChat } from "../../wire/serializers";
import { rejectForeignId } from "../access/id-params";
import { assertLineAccess, resolveLine } from "../lines/lines";
import { whereOnLine } from "../lines/tenancy";

export async function resolveChat(actor: Actor, line: Line, to: string, param = "to"): Promise<Chat> {
  const db = await getDb();
  const value = to.trim();
  rejectForeignId(value, "chat", param);
  const chat = value.startsWith("cht_")
    ? await db.chat.findFirst({ where: { id: value, lineId: line.id, accountId: actor.accountId } })
    : await db.chat.findUnique({
        where: { lineId_accountId_identifier: { lineId: line.id, accountId: actor.accountId, identifier: normalizeHandle(value) } },
      });
  if (!chat) throw new ApiError("chat_not_found", `No chat with '${value}' on line ${line.handle}.`, { param });
  return chat;
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** Created when the line never talked to `to`: a line whose contact-first rule is off may message people first. */
export async function openChat(actor: Actor, line: Line, to: string): Promise<Chat> {
  const identifier = normalizeHandle(to);
  const sms = line.service === "sms";
  if (!isPhoneNumber(identifier) && (sms || !EMAIL.test(identifier))) {
    throw invalidParam("to", sms ? `${to} is not a phone number; an SMS line sends to E.164 numbers such as +15551230001.` : `${to} is not a phone number or an email address.`);
  }
  return ensureDirectChat(sql, { accountId: actor.accountId, lineId: line.id, identifier, service: sms ? "sms" : "imessage" });
}

/** Chats whose handle, name or a participant matches `search` (under AND: a page cursor brings an OR of its own). */
export function chatSearch(search: string | undefined) {
  const text = search?.trim();
  if (!text) return {};
  return {
    AND: [
      {
        OR: [
          { identifier: { contains: text, mode: "insensitive" as const } },
          { name: { contains: text, mode: "insensitive" as const } },
          { participants: { has: text } },
        ],
      },
    ],
  };
}

export async function listChats(
  actor: Actor,
  input: { from: string; limit: number; cursor?: string; search?: string },
): Promise<Page<ReturnType<typeof serializeChat>>> {
  const line = await resolveLine(actor, input.from);
  const db = await getDb();
  const page = keysetDesc("lastMessageAt", input.cursor, { nullable: true });
  const rows = await db.chat.findMany({
    where: { ...whereOnLine(actor, line), ...chatSearch(input.search), ...page.where },
    orderBy: page.orderBy,
    take: input.limit + 1,
  });
  return toPage(rows, input.limit, serializeChat, (c) => [c.lastMessageAt?.getTime() ?? null, c.id]);
}

export async function getChat(actor: Actor, id: string) {
  const db = await getDb();
  const chat = await db.chat.findFirst({ where: { id, accountId: actor.accountId }, include: { line: true } });
  if (!chat) throw new ApiError("chat_not_found", `No chat with ID '${id}'.`, { param: "id" });
  await assertLineAccess(actor, chat.line);
  return { ...serializeChat(chat), line_handle: chat.line.handle };
}

/** The marker only moves forward. */
export async function markChatRead(actor: Actor, id: string, at = new Date()) {
  const chat = await getChat(actor, id);
  await moveReadMarker(actor.accountId, chat.id, at);
  return { object: "chat_read" as const, chat_id: chat.id, read_at: at.getTime() };
}

export async function moveReadMarker(accountId: string, chatId: string, at = new Date()): Promise<void> {
  const db = await getDb();
  await db.chat.updateMany({ where: { id: chatId, accountId, OR: [{ lastReadAt: null }, { lastReadAt: { lt: at } }] }, data: { lastReadAt: at } });
}

import type { Actor } from "../access/actor";
import { getDb } from "../../db";
import { ApiError } from "../../kernel/errors";
import type { Chat, Line } from "../../generated/prisma/client";
import { normalizeHandle } from "../../kernel/handles";
import { keysetDesc, type Page, toPage } from "../../wire/pagination";
import { serializeChat } from "../../wire/serializers";
import { rejectForeignId } from "../access/id-params";
import { assertLineAccess, resolveLine } from "../lines/lines";
import { whereOnLine } from "../lines/tenancy";

/** The chat named by `to` (cht_ ID, phone number or account ID) on a line, for this account. */
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

export async function listChats(
  actor: Actor,
  input: { from: string; limit: number; cursor?: string; search?: string },
): Promise<Page<ReturnType<typeof serializeChat>>> {
  const line = await resolveLine(actor, input.from);
  const db = await getDb();
  const page = keysetDesc("lastMessageAt", input.cursor, { nullable: true });
  const search = input.search?.trim();
  const rows = await db.chat.findMany({
    where: {
      ...whereOnLine(actor, line),
      // Under AND: the page cursor brings an OR of its own.
      ...(search
        ? {
            AND: [
              {
                OR: [
                  { identifier: { contains: search, mode: "insensitive" as const } },
                  { name: { contains: search, mode: "insensitive" as const } },
                  { participants: { has: search } },
                ],
              },
            ],
          }
        : {}),
      ...page.where,
    },
    orderBy: page.orderBy,
    take: input.limit + 1,
  });
  return toPage(rows, input.limit, serializeChat, (c) => [c.lastMessageAt?.getTime() ?? null, c.id]);
}

/** One chat by cht_ ID (the dashboard's conversation view). */
export async function getChat(actor: Actor, id: string) {
  const db = await getDb();
  const chat = await db.chat.findFirst({ where: { id, accountId: actor.accountId }, include: { line: true } });
  if (!chat) throw new ApiError("chat_not_found", `No chat with ID '${id}'.`, { param: "id" });
  await assertLineAccess(actor, chat.line);
  return { ...serializeChat(chat), line_handle: chat.line.handle };
}

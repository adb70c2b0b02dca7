import type { Actor } from "../access/actor";
import { getDb } from "../../db";
import { keysetAsc, type Page, toPage } from "../../wire/pagination";
import { serializeReceipt, serializeTyping } from "../../wire/serializers";
import { resolveChat } from "./chats";
import { resolveLine } from "../lines/lines";

// Typing indicators and read receipts of one chat (GET /v1/typing, GET /v1/receipts).

interface ChatStateQuery {
  from: string;
  to: string;
  limit: number;
  cursor?: string;
}

async function chatOf(actor: Actor, input: ChatStateQuery) {
  const line = await resolveLine(actor, input.from);
  return resolveChat(actor, line, input.to);
}

export async function listTyping(actor: Actor, input: ChatStateQuery): Promise<Page<ReturnType<typeof serializeTyping>>> {
  const chat = await chatOf(actor, input);
  const db = await getDb();
  const page = keysetAsc(input.cursor);
  const rows = await db.typingIndicator.findMany({
    where: { chatId: chat.id, ...page.where },
    orderBy: page.orderBy,
    take: input.limit + 1,
  });
  const now = Date.now();
  return toPage(rows, input.limit, (t) => serializeTyping(t, now), (t) => [t.id]);
}

export async function listReceipts(actor: Actor, input: ChatStateQuery): Promise<Page<ReturnType<typeof serializeReceipt>>> {
  const chat = await chatOf(actor, input);
  const db = await getDb();
  const page = keysetAsc(input.cursor);
  const rows = await db.readReceipt.findMany({
    where: { chatId: chat.id, ...page.where },
    orderBy: page.orderBy,
    take: input.limit + 1,
  });
  return toPage(rows, input.limit, serializeReceipt, (r) => [r.id]);
}

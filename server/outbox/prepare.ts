import { getDb } from "../db";
import type { Chat, File, Line, OutboxItem } from "../generated/prisma/client";
import { isSerialLine } from "../platform/connection";
import { findLine } from "../db/line-cache";
import { MessagePayload, OutboxTarget, type OutboxKind, ReactionPayload, ReceiptPayload, TypingPayload } from "./payloads";

export interface BatchContext {
  lines: Map<string, Line>;
  files: Map<string, File>;
  chats: Map<string, Chat>;
}

export async function loadContext(items: OutboxItem[]): Promise<BatchContext> {
  const db = await getDb();
  const lineIds = [...new Set(items.map((i) => i.lineId))];
  const fileIds = [
    ...new Set(items.flatMap((i) => (i.kind === "message" ? MessagePayload.parse(i.payload).attachments : []))),
  ];
  const [lines, files] = await Promise.all([
    Promise.all(lineIds.map((id) => findLine(id))),
    fileIds.length ? db.file.findMany({ where: { id: { in: fileIds } } }) : Promise.resolve([]),
  ]);
  const serial = new Set(lines.filter((l): l is Line => l !== null && isSerialLine(l)).map((l) => l.id));
  const chatIds = [...new Set(items.filter((i) => serial.has(i.lineId)).map((i) => OutboxTarget.parse(i.payload).chat_id))];
  const chats = chatIds.length ? await db.chat.findMany({ where: { id: { in: chatIds } } }) : [];
  return {
    lines: new Map(lines.filter((l): l is Line => l !== null).map((l) => [l.id, l])),
    files: new Map(files.map((f) => [f.id, f])),
    chats: new Map(chats.map((c) => [c.id, c])),
  };
}

export type Prepared = (
  | { kind: "message"; item: OutboxItem; line: Line; p: MessagePayload; files: File[] }
  | { kind: "reaction"; item: OutboxItem; line: Line; p: ReactionPayload }
  | { kind: "typing"; item: OutboxItem; line: Line; p: TypingPayload }
  | { kind: "receipt"; item: OutboxItem; line: Line; p: ReceiptPayload }
) & { providerChatId: string | null };

export function prepare(item: OutboxItem, ctx: BatchContext): Prepared {
  const line = ctx.lines.get(item.lineId);
  if (!line) throw new Error(`line ${item.lineId} of ${item.id} no longer exists`);
  const kind = item.kind as OutboxKind;
  const providerChatId = ctx.chats.get(OutboxTarget.parse(item.payload).chat_id)?.providerChatId ?? null;
  switch (kind) {
    case "message": {
      const p = MessagePayload.parse(item.payload);
      // Files of another account are never sent, whatever a payload says.
      const files = p.attachments.map((id) => ctx.files.get(id)).filter((f): f is File => f?.accountId === item.accountId);
      return { kind, item, line, p, files, providerChatId };
    }
    case "reaction":
      return { kind, item, line, p: ReactionPayload.parse(item.payload), providerChatId };
    case "typing":
      return { kind, item, line, p: TypingPayload.parse(item.payload), providerChatId };
    case "receipt":
      return { kind, item, line, p: ReceiptPayload.parse(item.payload), providerChatId };
    default:
      throw new Error(`unknown outbox kind ${item.kind}`);
  }
}

/** Null when it is not claimed: handled already. */
export async function preparedOne(id: string): Promise<Prepared | null> {
  const db = await getDb();
  const item = await db.outboxItem.findUnique({ where: { id } });
  if (item?.status !== "claimed") return null;
  return prepare(item, await loadContext([item]));
}

import type { Actor } from "../access/actor";
import type { OutboxItem } from "../../generated/prisma/client";
import { ApiError } from "../../kernel/errors";
import { fire } from "../../kernel/signals";
import { approveHeld, rejectHeld } from "../../outbox/held-items";
import { sendsSerially } from "../../outbox/serial";
import { findLine } from "../../db/line-cache";
import type { Unit } from "../../write/unit";
import { findOutboxItem, outboxScope } from "./outbox";
import { z } from "zod";
import { getDb, sql } from "../../db";
import { ID_PREFIXES } from "../../kernel/ids";
import { NEVER } from "../../policy/hold-reasons";
import { MessagePayload, ReactionPayload } from "../../outbox/payloads";
import { keysetAsc, PageQuery, toPage } from "../../wire/pagination";
import { serializeChat, serializeOutboxItem } from "../../wire/serializers";
import { getChat } from "./chats";

export function actorName(actor: Actor): string {
  return actor.userId ?? actor.keyId ?? actor.accountId;
}

export async function requestApproval(unit: Unit, id: string): Promise<void> {
  const [item] = await unit.query<OutboxItem>(`SELECT * FROM "OutboxItem" WHERE id = $1`, [id]);
  if (!item) return;
  const data = { ...serializeOutboxItem(item), api_key_id: item.apiKeyId };
  await unit.fanOut([{ accountId: item.accountId, lineId: item.lineId, event: "outbox.approval_requested", data }]);
}

async function notReviewable(actor: Actor, id: string): Promise<ApiError> {
  const item = await findOutboxItem(actor, id);
  const view = serializeOutboxItem(item);
  const what = view.status === "pending" ? `pending${view.hold_reason ? ` (${view.hold_reason})` : ""}` : view.status;
  return new ApiError("outbox_item_not_reviewable", `Outbox item ${id} is ${what}: only a send waiting for approval can be approved or rejected.`, { param: "id" });
}

/** It goes now, or at the send_at it asked for. */
export async function approveSend(actor: Actor, id: string) {
  const item = await findOutboxItem(actor, id);
  const approved = await approveHeld(item.id, actorName(actor));
  if (!approved) throw await notReviewable(actor, id);
  const line = await findLine(approved.lineId);
  fire("outbox.stored", { id: approved.id, lineId: approved.lineId, serial: line ? sendsSerially(line.provider) : false });
  return serializeOutboxItem(approved);
}

export async function rejectSend(actor: Actor, id: string) {
  const item = await findOutboxItem(actor, id);
  const rejected = await rejectHeld(item, actorName(actor));
  if (!rejected) throw await notReviewable(actor, id);
  return serializeOutboxItem(rejected);
}

// The dashboard's queue, in a fixed number of queries whatever the page's size.

const CONTEXT_MESSAGES = 5;

export const ApprovalQueueQuery = PageQuery.extend({
  chat_id: z.string().trim().min(1).max(100).optional().describe("Only the sends waiting in this chat"),
});

/** Waiting for approval, read through the (status, availableAt) index: such an item's due time is NEVER until it is reviewed. */
const waitingWhere = { status: "held", holdReason: "approval", availableAt: { gte: NEVER } };

export async function countWaitingApprovals(actor: Actor): Promise<number> {
  const db = await getDb();
  return db.outboxItem.count({ where: { ...(await outboxScope(actor)), ...waitingWhere } });
}

interface ContextRow {
  id: string;
  chatId: string;
  text: string | null;
  isFromMe: boolean;
  isAudioMessage: boolean | null;
  sender: string;
  sentAt: Date;
  attachments: number;
}

/** One index probe per chat (chatId, sentAt desc). */
function lastMessagesOf(accountId: string, chatIds: string[], n: number) {
  return sql<ContextRow>(
    `SELECT m.* FROM unnest($1::text[]) AS c(id) CROSS JOIN LATERAL (
       SELECT x.id, x."chatId", x.text, x."isFromMe", x."isAudioMessage", x.sender, x."sentAt",
              (SELECT count(*)::int FROM "Attachment" a WHERE a."messageId" = x.id) AS attachments
       FROM "Message" x WHERE x."chatId" = c.id AND x."accountId" = $2 ORDER BY x."sentAt" DESC, x.id DESC LIMIT $3) m`,
    [chatIds, accountId, n],
  );
}

const unique = (values: (string | null | undefined)[]) => [...new Set(values.filter((v): v is string => !!v))];

export async function listApprovalQueue(actor: Actor, input: z.output<typeof ApprovalQueueQuery>) {
  const db = await getDb();
  const page = keysetAsc(input.cursor);
  const rows = await db.outboxItem.findMany({
    where: { ...(await outboxScope(actor)), ...waitingWhere, ...(input.chat_id ? { chatId: input.chat_id } : {}), ...page.where },
    orderBy: page.orderBy,
    take: input.limit + 1,
  });
  const result = toPage(rows, input.limit, (o) => o, (o) => [o.id]);
  const items = result.data;
  if (!items.length) return { ...result, data: [] };
  const accountId = actor.accountId;
  const messages = items.map((i) => (i.kind === "message" ? MessagePayload.safeParse(i.payload).data : undefined));
  const reactions = items.map((i) => (i.kind === "reaction" ? ReactionPayload.safeParse(i.payload).data : undefined));
  const chatIds = unique(items.map((i) => i.chatId));
  const fileIds = unique(messages.flatMap((m) => m?.attachments ?? []));
  const reactedIds = unique(reactions.map((r) => r?.message_id));
  const [chats, lines, keys, files, context, reacted] = await Promise.all([
    db.chat.findMany({ where: { id: { in: chatIds }, accountId } }),
    db.line.findMany({ where: { id: { in: unique(items.map((i) => i.lineId)) } }, select: { id: true, handle: true, label: true, isSandbox: true } }),
    db.apiKey.findMany({ where: { id: { in: unique(items.map((i) => i.apiKeyId)) }, accountId }, select: { id: true, name: true, prefix: true } }),
    fileIds.length ? db.file.findMany({ where: { id: { in: fileIds }, accountId }, select: { id: true, filename: true, mimeType: true, size: true } }) : [],
    chatIds.length ? lastMessagesOf(accountId, chatIds, CONTEXT_MESSAGES) : [],
    reactedIds.length ? db.message.findMany({ where: { id: { in: reactedIds }, accountId }, select: { id: true, text: true } }) : [],
  ]);
  const chatOf = new Map(chats.map((c) => [c.id, c]));
  const lineOf = new Map(lines.map((l) => [l.id, l]));
  const keyOf = new Map(keys.map((k) => [k.id, k]));
  const fileOf = new Map(files.map((f) => [f.id, f]));
  const reactedOf = new Map(reacted.map((m) => [m.id, m.text]));
  const contextOf = new Map<string, ContextRow[]>();
  for (const m of context) contextOf.set(m.chatId, [...(contextOf.get(m.chatId) ?? []), m]);
  return {
    ...result,
    data: items.map((item, n) => {
      const message = messages[n];
      const reaction = reactions[n];
      const chat = item.chatId ? chatOf.get(item.chatId) : undefined;
      const line = lineOf.get(item.lineId);
      const key = item.apiKeyId ? keyOf.get(item.apiKeyId) : undefined;
      return {
        ...serializeOutboxItem(item),
        send_at: item.sendAt ? item.sendAt.getTime() : null,
        text: message?.text ?? null,
        is_audio_message: message?.is_audio_message ?? false,
        attachments: (message?.attachments ?? []).map((id) => {
          const f = fileOf.get(id);
          return { id, filename: f?.filename ?? id, mime_type: f?.mimeType ?? null, size: f?.size ?? null };
        }),
        reaction: reaction ? { type: reaction.type, added: reaction.added, message_id: reaction.message_id, message_text: reactedOf.get(reaction.message_id) ?? null } : null,
        chat: chat ? serializeChat(chat) : null,
        line: line ? { id: line.id, handle: line.handle, label: line.isSandbox ? "Sandbox" : line.label } : { id: item.lineId, handle: item.lineId, label: null },
        api_key: key ? { id: key.id, name: key.name, prefix: key.prefix } : item.apiKeyId ? { id: item.apiKeyId, name: null, prefix: null } : null,
        context: (item.chatId ? (contextOf.get(item.chatId) ?? []) : [])
          .map((m) => ({ id: m.id, text: m.text, is_from_me: m.isFromMe, is_audio_message: m.isAudioMessage ?? false, sender: m.sender, sent_at: m.sentAt.getTime(), attachments: m.attachments }))
          .reverse(),
      };
    }),
  };
}

/** Tenancy: only this account's user, keys and the account itself. */
async function whoIs(actor: Actor, id: string | null): Promise<{ id: string; kind: "user" | "api_key" | "account" | "unknown"; name: string } | null> {
  if (!id) return null;
  const db = await getDb();
  if (id.startsWith(`${ID_PREFIXES.user}_`)) {
    const user = await db.user.findFirst({ where: { id, accounts: { some: { id: actor.accountId } } }, select: { email: true } });
    if (user) return { id, kind: "user", name: user.email };
  } else if (id.startsWith(`${ID_PREFIXES.apiKey}_`)) {
    const key = await db.apiKey.findFirst({ where: { id, accountId: actor.accountId }, select: { name: true } });
    if (key) return { id, kind: "api_key", name: key.name };
  } else if (id === actor.accountId) {
    const account = await db.account.findUniqueOrThrow({ where: { id }, select: { email: true } });
    return { id, kind: "account", name: account.email };
  }
  return { id, kind: "unknown", name: id };
}

export async function chatTakeover(actor: Actor, chatId: string) {
  const chat = await getChat(actor, chatId);
  return { object: "chat_takeover" as const, chat_id: chat.id, paused_at: chat.paused_at, paused_by: chat.paused_at ? await whoIs(actor, chat.paused_by) : null };
}

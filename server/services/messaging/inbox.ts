import { z } from "zod";
import type { Actor } from "../access/actor";
import { getDb, sql } from "../../db";
import { PageQuery, keysetDesc, toPage } from "../../wire/pagination";
import { msOrNull, serializeChat, serializeOutboxItem } from "../../wire/serializers";
import { MessagePayload } from "../../outbox/payloads";
import { resolveLine } from "../lines/lines";
import { whereForActor, whereOnLine } from "../lines/tenancy";
import { chatSearch, getChat } from "./chats";

// A chat's sends that have no message yet (pending or failed) come from the outbox, so a failed send stays in the
// conversation until it is sent again.

export const InboxQuery = PageQuery.extend({
  line: z.string().trim().min(1).max(320).optional().describe("One line's handle or ln_ ID; all lines when absent"),
  search: z.string().trim().max(200).optional(),
});

interface LastMessageRow {
  chatId: string;
  id: string;
  text: string | null;
  isFromMe: boolean;
  isAudioMessage: boolean | null;
  sentAt: Date;
  deliveryStatus: string | null;
  attachments: number;
}

/** One index probe per chat (chatId, sentAt desc). */
function lastMessages(chatIds: string[]) {
  return sql<LastMessageRow>(
    `SELECT m.* FROM unnest($1::text[]) AS c(id) CROSS JOIN LATERAL (
       SELECT x.id, x."chatId", x.text, x."isFromMe", x."isAudioMessage", x."sentAt", x."deliveryStatus",
              (SELECT count(*)::int FROM "Attachment" a WHERE a."messageId" = x.id) AS attachments
       FROM "Message" x WHERE x."chatId" = c.id ORDER BY x."sentAt" DESC, x.id DESC LIMIT 1) m`,
    [chatIds],
  );
}

function unreadCounts(accountId: string, chatIds: string[]) {
  return sql<{ chatId: string; unread: number }>(
    `SELECT m."chatId", count(*)::int AS unread FROM "Message" m JOIN "Chat" c ON c.id = m."chatId"
     WHERE m."chatId" = ANY($1::text[]) AND c."accountId" = $2 AND NOT m."isFromMe"
       AND (c."lastReadAt" IS NULL OR m."sentAt" > c."lastReadAt")
     GROUP BY m."chatId"`,
    [chatIds, accountId],
  );
}

function lastUnsent(chatIds: string[]) {
  return sql<{ chatId: string; id: string; status: string; error: string | null; createdAt: Date }>(
    `SELECT o.* FROM unnest($1::text[]) AS c(id) CROSS JOIN LATERAL (
       SELECT x.id, x."chatId", x.status, x.error, x."createdAt" FROM "OutboxItem" x
       WHERE x."chatId" = c.id AND x.status IN ('pending', 'held', 'claimed', 'failed') AND x.kind = 'message' AND x."canceledAt" IS NULL
         AND NOT EXISTS (SELECT 1 FROM "OutboxItem" r WHERE r."retryOf" = x.id)
       ORDER BY x."createdAt" DESC LIMIT 1) o`,
    [chatIds],
  );
}

const preview = (m: LastMessageRow) =>
  m.text ? m.text.slice(0, 140) : m.isAudioMessage ? "Voice memo" : m.attachments ? `${m.attachments} attachment${m.attachments > 1 ? "s" : ""}` : "";

export async function listInbox(actor: Actor, input: z.output<typeof InboxQuery>) {
  const db = await getDb();
  const line = input.line ? await resolveLine(actor, input.line) : null;
  const scope = line ? whereOnLine(actor, line) : await whereForActor(actor);
  const page = keysetDesc("lastMessageAt", input.cursor, { nullable: true });
  const rows = await db.chat.findMany({
    where: { ...scope, ...chatSearch(input.search), ...page.where },
    orderBy: page.orderBy,
    take: input.limit + 1,
    include: { line: { select: { handle: true, label: true, isSandbox: true } } },
  });
  const result = toPage(rows, input.limit, (c) => c, (c) => [c.lastMessageAt?.getTime() ?? null, c.id]);
  const ids = result.data.map((c) => c.id);
  const [last, unread, unsent] = ids.length ? await Promise.all([lastMessages(ids), unreadCounts(actor.accountId, ids), lastUnsent(ids)]) : [[], [], []];
  const lastOf = new Map(last.map((m) => [m.chatId, m]));
  const unreadOf = new Map(unread.map((u) => [u.chatId, u.unread]));
  const unsentOf = new Map(unsent.map((o) => [o.chatId, o]));
  return {
    ...result,
    data: result.data.map((c) => {
      const m = lastOf.get(c.id);
      const o = unsentOf.get(c.id);
      // A send newer than the last message is what the chat shows last.
      const pendingLast = o && (!m || o.createdAt > m.sentAt) ? o : null;
      return {
        ...serializeChat(c),
        line_handle: c.line.handle,
        line_label: c.line.isSandbox ? "Sandbox" : c.line.label,
        unread_count: unreadOf.get(c.id) ?? 0,
        last_read_at: msOrNull(c.lastReadAt),
        last_message: m
          ? { id: m.id, preview: preview(m), is_from_me: m.isFromMe, sent_at: m.sentAt.getTime(), delivery_status: m.deliveryStatus }
          : null,
        last_send: pendingLast ? { outbox_id: pendingLast.id, status: pendingLast.status === "held" ? "pending" : pendingLast.status, error: pendingLast.error, created_at: pendingLast.createdAt.getTime() } : null,
      };
    }),
  };
}

export async function unsentSends(actor: Actor, chatId: string, limit = 50) {
  const chat = await getChat(actor, chatId);
  const db = await getDb();
  const items = await db.outboxItem.findMany({
    // A canceled send was the owner's decision: the outbox keeps it, the conversation does not.
    where: { chatId: chat.id, accountId: actor.accountId, kind: "message", status: { in: ["pending", "held", "claimed", "failed"] }, canceledAt: null },
    orderBy: [{ createdAt: "desc" }, { id: "desc" }],
    take: limit * 2,
  });
  const retried = new Set(
    items.length
      ? (await db.outboxItem.findMany({ where: { retryOf: { in: items.map((i) => i.id) } }, select: { retryOf: true } })).map((r) => r.retryOf)
      : [],
  );
  return items
    .filter((i) => !retried.has(i.id))
    .slice(0, limit)
    .map((i) => {
      const payload = MessagePayload.safeParse(i.payload).data;
      const wire = serializeOutboxItem(i); // held is pending on the wire, with its hold
      return {
        object: "unsent_send" as const,
        outbox_id: i.id,
        status: wire.status as "pending" | "claimed" | "failed",
        hold_reason: wire.hold_reason,
        not_before: wire.not_before,
        error: i.error,
        attempts: i.attempts,
        max_attempts: i.maxAttempts,
        created_at: i.createdAt.getTime(),
        completed_at: msOrNull(i.completedAt),
        text: payload?.text ?? null,
        attachments: payload?.attachments.length ?? 0,
        is_audio_message: payload?.is_audio_message ?? false,
        reply_to_guid: payload?.reply_to_guid ?? null,
      };
    });
}

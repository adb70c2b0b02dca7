import { chunkRows, valuesList } from "../db";
import type { Attachment, Message } from "../generated/prisma/client";
import { newId } from "../kernel/ids";
import { serializeMessage } from "../wire/serializers";
import type { FileUrlSigner } from "../storage/signed-urls";
import type { Unit } from "../write/unit";

// The message store: every Message row is written here, whoever brings it (the outbox's sent
// messages, a contact's received ones, the line owner's own typed on the device). A batch is
// written with one statement per table: the messages (a GUID the line already has, or an
// outbox item already recorded, is skipped), their attachments, and the chats they move (the
// newest message's time; a received one marks the chat as having heard from the contact). The
// message.received / message.sent webhook events of the rows actually written are fanned out in
// the same unit of work, and received ones are published live. A single message is a batch of one.

interface NewAttachment {
  fileId: string;
  filename: string;
  mimeType: string;
  size: number;
  transcription?: string | null;
  /** Bytes received with the message, already in storage: the File row is written with it. */
  storedFile?: { sha256: string; storageKey: string };
}

export interface NewMessage {
  /** Minted when absent. */
  id?: string;
  accountId: string;
  lineId: string;
  /** The line's handle, which webhook payloads carry as line_handle. */
  lineHandle: string;
  chatId: string;
  guid: string;
  sender: string;
  text: string | null;
  isFromMe: boolean;
  isAudioMessage: boolean | null;
  service: string;
  replyToGuid: string | null;
  /** The outbox item that sent it (our sends only). */
  outboxId?: string | null;
  sentAt: Date;
  /** `sent` on lines whose provider reports delivery (our sends only). */
  deliveryStatus?: string | null;
  /** Sent as SMS because the recipient cannot receive iMessage. */
  fallback?: boolean | null;
  attachments?: NewAttachment[];
}

export type StoredMessage = Message & { attachments: Attachment[] };

/**
 * The chat rule (see moveChats) as the SET list of an upsert's conflict clause, for a caller that
 * creates or upserts the chats in the same unit with the message's time as "lastMessageAt" and
 * whether it was received as "hasReceivedInbound" (the inbound batch). It then writes its
 * messages with `chatsMoved`, and the chats are not updated a second time.
 */
export const CHAT_RULE_ON_UPSERT = `"lastMessageAt" = GREATEST("Chat"."lastMessageAt", EXCLUDED."lastMessageAt"), "hasReceivedInbound" = "Chat"."hasReceivedInbound" OR EXCLUDED."hasReceivedInbound"`;

export interface WriteOptions {
  /** Chats the caller already applied the chat rule to in this unit (CHAT_RULE_ON_UPSERT). */
  movedChats?: ReadonlySet<string>;
}

/**
 * Writes the messages that are new and announces them; returns, in input order, the index and
 * row of each one written (a repeat is left out).
 */
export async function writeMessages(unit: Unit, input: NewMessage[], url: FileUrlSigner, options: WriteOptions = {}): Promise<{ index: number; message: StoredMessage }[]> {
  if (!input.length) return [];
  const syncedAt = new Date();
  const rows: StoredMessage[] = input.map((m) => {
    const id = m.id ?? newId("message");
    return {
      id,
      accountId: m.accountId,
      lineId: m.lineId,
      chatId: m.chatId,
      guid: m.guid,
      sender: m.sender,
      text: m.text,
      isFromMe: m.isFromMe,
      isAudioMessage: m.isAudioMessage,
      service: m.service,
      replyToGuid: m.replyToGuid,
      outboxId: m.outboxId ?? null,
      sentAt: m.sentAt,
      syncedAt,
      deliveryStatus: m.deliveryStatus ?? null,
      deliveredAt: null,
      deliveryError: null,
      fallback: m.fallback ?? null,
      attachments: (m.attachments ?? []).map((a, position) => ({
        id: newId("attachment"),
        messageId: id,
        fileId: a.fileId,
        position,
        filename: a.filename,
        mimeType: a.mimeType,
        size: a.size,
        transcription: a.transcription ?? null,
      })),
    };
  });
  const written = new Set<string>();
  // The arbiter: a GUID the line already has; for our sends also an outbox item already recorded.
  // Named when it is only the GUID, so each row is checked against one unique index, not all.
  const conflict = rows.some((m) => m.outboxId !== null) ? "" : `("lineId", guid)`;
  for (const chunk of chunkRows(rows.map(messageValues))) {
    const v = valuesList(chunk, MESSAGE_CASTS);
    const inserted = await unit.query<{ id: string }>(
      `INSERT INTO "Message" (id, "accountId", "lineId", "chatId", guid, sender, text, "isFromMe", "isAudioMessage", service, "replyToGuid", "outboxId", "sentAt", "syncedAt", "deliveryStatus", fallback)
       VALUES ${v.text} ON CONFLICT ${conflict} DO NOTHING RETURNING id`,
      v.params,
    );
    for (const { id } of inserted) written.add(id);
  }
  const stored = rows.flatMap((message, index) => (written.has(message.id) ? [{ index, message }] : []));
  if (!stored.length) return [];
  const files = stored.flatMap(({ index, message }) =>
    (input[index]!.attachments ?? []).flatMap((a) => (a.storedFile ? [[a.fileId, message.accountId, a.filename, a.mimeType, a.size, a.storedFile.sha256, a.storedFile.storageKey]] : [])),
  );
  for (const chunk of chunkRows(files)) {
    const v = valuesList(chunk);
    await unit.query(`INSERT INTO "File" (id, "accountId", filename, "mimeType", size, sha256, "storageKey") VALUES ${v.text}`, v.params);
  }
  const attachments = stored.flatMap(({ message }) => message.attachments.map((a) => [a.id, a.messageId, a.fileId, a.position, a.filename, a.mimeType, a.size, a.transcription]));
  for (const chunk of chunkRows(attachments)) {
    const v = valuesList(chunk);
    await unit.query(`INSERT INTO "Attachment" (id, "messageId", "fileId", position, filename, "mimeType", size, transcription) VALUES ${v.text}`, v.params);
  }
  // Last in the transaction: concurrent batches to one busy chat wait on its row only briefly.
  const moved = stored.map(({ message }) => message).filter((m) => !options.movedChats?.has(m.chatId));
  if (moved.length) unit.last(() => moveChats(unit, moved));
  await unit.fanOut(
    stored.map(({ index, message }) => ({
      accountId: message.accountId,
      lineId: message.lineId,
      event: message.isFromMe ? ("message.sent" as const) : ("message.received" as const),
      data: { ...serializeMessage(message, url), line_handle: input[index]!.lineHandle },
    })),
  );
  unit.live(
    stored
      .filter(({ message }) => !message.isFromMe)
      .map(({ message: m }) => ({ type: "message.received" as const, accountId: m.accountId, lineId: m.lineId, chatId: m.chatId, messageId: m.id })),
  );
  unit.changed(stored.map(({ message }) => message.accountId));
  return stored;
}

const MESSAGE_CASTS = ["", "", "", "", "", "", "", "::boolean", "::boolean", "", "", "", "::timestamptz", "::timestamptz", "", "::boolean"];

function messageValues(m: StoredMessage): unknown[] {
  return [m.id, m.accountId, m.lineId, m.chatId, m.guid, m.sender, m.text, m.isFromMe, m.isAudioMessage, m.service, m.replyToGuid, m.outboxId, m.sentAt, m.syncedAt, m.deliveryStatus, m.fallback];
}

/**
 * The rule every new message follows: its chat's last_message_at moves to the newest message
 * (never back), and a received message marks the chat as having heard from the contact (which
 * lets the line message them first afterwards). One statement, chats in one lock order; a
 * chat it would not change is not written.
 */
async function moveChats(unit: Unit, messages: Message[]): Promise<void> {
  const chats = new Map<string, { at: Date; received: boolean }>();
  for (const m of messages) {
    const chat = chats.get(m.chatId);
    if (!chat) chats.set(m.chatId, { at: m.sentAt, received: !m.isFromMe });
    else chats.set(m.chatId, { at: chat.at > m.sentAt ? chat.at : m.sentAt, received: chat.received || !m.isFromMe });
  }
  const sorted = [...chats].sort(([a], [b]) => (a < b ? -1 : 1));
  for (const chunk of chunkRows(sorted.map(([id, c]) => [id, c.at, c.received]))) {
    const v = valuesList(chunk, ["", "::timestamptz", "::boolean"]);
    await unit.query(
      `UPDATE "Chat" c SET "lastMessageAt" = GREATEST(c."lastMessageAt", v.at), "hasReceivedInbound" = c."hasReceivedInbound" OR v.received
       FROM (VALUES ${v.text}) AS v (id, at, received)
       WHERE c.id = v.id AND (c."lastMessageAt" IS NULL OR c."lastMessageAt" < v.at OR (v.received AND NOT c."hasReceivedInbound"))`,
      v.params,
    );
  }
}

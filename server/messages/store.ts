import { chunkRows, valuesList } from "../db";
import type { Attachment, Message } from "../generated/prisma/client";
import { newId } from "../kernel/ids";
import { serializeMessage } from "../wire/serializers";
import type { FileUrlSigner } from "../storage/signed-urls";
import type { Unit } from "../write/unit";
import { type InboundChatRow, moveChats, placeInboundChats } from "./chat-rows";
import { recordReports, type StoredReport } from "./delivery-status";

// The message store: every Message row (docs/architecture.md, "One write path").

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
  id?: string;
  accountId: string;
  lineId: string;
  lineHandle: string;
  chatId: string;
  guid: string;
  sender: string;
  text: string | null;
  isFromMe: boolean;
  isAudioMessage: boolean | null;
  service: string;
  replyToGuid: string | null;
  outboxId?: string | null;
  sentAt: Date;
  deliveryStatus?: string | null;
  fallback?: boolean | null;
  attachments?: NewAttachment[];
}

export type StoredMessage = Message & { attachments: Attachment[] };

interface WriteOptions {
  movedChats?: ReadonlySet<string>;
}

/** Returns, in input order, the index and row of each message written (a repeat is left out). */
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
  if (moved.length) unit.last(() => moveChats(unit.query, moved));
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

export interface InboundBatch {
  chats: InboundChatRow[];
  /** `chat`: the index of the message's chat in `chats`. */
  messages: (Omit<NewMessage, "chatId"> & { chat: number })[];
  reports: StoredReport[];
}

/** An inbound batch's chats, messages and delivery reports in one call. */
export async function storeInbound(unit: Unit, batch: InboundBatch, url: FileUrlSigner) {
  const chats = await placeInboundChats(unit.query, batch.chats);
  const placed = batch.messages.flatMap((m, index) => {
    const chatId = chats.ids[m.chat];
    return chatId ? [{ index, message: { ...m, chatId } }] : [];
  });
  const written = await writeMessages(unit, placed.map((p) => p.message), url, { movedChats: chats.moved });
  const freshReports = await recordReports(unit, batch.reports, url);
  return { chatIds: chats.ids, written: new Map(written.map((w) => [placed[w.index]!.index, w.message])), freshReports };
}

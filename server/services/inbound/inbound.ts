import { createHash, randomUUID } from "node:crypto";
import { getDb, type Prisma } from "../../db";
import { writeMessages } from "../../messages/store";
import { prismaUnitOfWork } from "../../write/unit";
import { ApiError, invalidParam } from "../../kernel/errors";
import type { Chat, Line, Message, Reaction, ReadReceipt, TypingIndicator } from "../../generated/prisma/client";
import { normalizeHandle } from "../../kernel/handles";
import { newId } from "../../kernel/ids";
import { type InboundEvent, InboundEventSchema, type InboundMessage } from "../../platform/inbound-event";
import { serializeReaction } from "../../wire/serializers";
import { type StoredBlob, storeBlob } from "../../storage/blobs";
import { fileUrlSigner } from "../../storage/signed-urls";
import { normalizeActivationCode } from "../lines/sandbox";

// ingestInbound: the one way traffic from the other phones enters the service. It routes the
// event to the owning account (on the sandbox line: the account the sender's phone is paired
// with, or pairs it when the text is an activation code), creates chats, and stores messages,
// attachments, reactions, typing and read receipts.

type Tx = Prisma.TransactionClient;

type WithoutLine<E> = Omit<E, "lineId" | "type">;

/** The account that owns traffic from `sender` on `line`, pairing the sandbox when asked to. */
async function routeAccount(
  tx: Tx,
  line: Line,
  sender: string,
  text: string | null | undefined,
  now: Date,
  unpaired: string[] = [],
): Promise<string> {
  if (!line.isSandbox) return line.accountId!;
  if (text) {
    const pending = await tx.sandboxState.findUnique({ where: { activationCode: normalizeActivationCode(text) } });
    if (pending) {
      // A phone is paired with one account at a time: pairing here unpairs it elsewhere.
      const others = await tx.sandboxState.findMany({
        where: { contactIdentifier: sender, NOT: { accountId: pending.accountId } },
        select: { accountId: true },
      });
      unpaired.push(...others.map((o) => o.accountId));
      await tx.sandboxState.updateMany({
        where: { contactIdentifier: sender, NOT: { accountId: pending.accountId } },
        data: { contactIdentifier: null, status: "pending", activatedAt: null },
      });
      await tx.sandboxState.update({
        where: { accountId: pending.accountId },
        data: { status: "active", contactIdentifier: sender, activatedAt: pending.activatedAt ?? now },
      });
      return pending.accountId;
    }
  }
  const paired = await tx.sandboxState.findUnique({ where: { contactIdentifier: sender } });
  if (!paired || paired.status !== "active") {
    throw invalidParam(
      "from",
      `${sender} is not paired with any account's sandbox. Text an activation code to the sandbox number first.`,
    );
  }
  return paired.accountId;
}

function groupIdentifier(lineId: string, participants: string[]): string {
  const digest = createHash("sha256").update(`${lineId}|${[...participants].sort().join(",")}`).digest("hex");
  return `chat${digest.slice(0, 24)}`;
}

async function upsertChat(
  tx: Tx,
  line: Line,
  accountId: string,
  identifier: string,
  fields: { isGroup: boolean; participants: string[]; name?: string | null; service: string; providerChatId?: string },
): Promise<Chat> {
  const providerChatId = fields.providerChatId ? { providerChatId: fields.providerChatId } : {};
  return tx.chat.upsert({
    where: { lineId_accountId_identifier: { lineId: line.id, accountId, identifier } },
    create: {
      id: newId("chat"),
      accountId,
      lineId: line.id,
      identifier,
      service: fields.service,
      isGroup: fields.isGroup,
      participants: fields.participants,
      name: fields.name ?? null,
      ...providerChatId,
    },
    update: fields.isGroup
      ? { participants: fields.participants, ...(fields.name ? { name: fields.name } : {}), ...providerChatId }
      : providerChatId,
  });
}

export function directChat(tx: Tx, line: Line, accountId: string, sender: string, providerChatId?: string): Promise<Chat> {
  return upsertChat(tx, line, accountId, sender, { isGroup: false, participants: [sender], service: lineService(line), providerChatId });
}

const lineService = (line: Line) => (line.service === "sms" ? "sms" : "imessage");

/**
 * Takes in one inbound message. `stored`: the attachment's bytes, already streamed to storage
 * (a provider's download); the caller discards it when the message is not created.
 */
export async function ingestMessage(line: Line, event: WithoutLine<InboundMessage>, stored?: StoredBlob): Promise<{ message: Message; created: boolean }> {
  const db = await getDb();
  const sender = normalizeHandle(event.sender);
  if (event.guid) {
    const existing = await db.message.findUnique({ where: { lineId_guid: { lineId: line.id, guid: event.guid } } });
    if (existing) return { message: existing, created: false };
  }
  const text = event.text ?? null;
  if ((text === null || text === "") && !event.attachment) {
    throw new ApiError("missing_required_parameter", "An inbound message needs text or an attachment.", { param: "text" });
  }
  if (line.isSandbox && event.group) throw invalidParam("group", "The sandbox line does not take group chats.");
  const isAudio = event.isAudioMessage === true;
  if (isAudio && !event.attachment?.mimeType.startsWith("audio/")) {
    throw invalidParam("attachment", "A voice memo (is_audio_message true) needs an audio attachment.");
  }

  const file = event.attachment ? (stored ?? (await storeBlob(event.attachment.content))) : null;

  const now = new Date();
  const sentAt = new Date(event.sentAt ?? now.getTime());
  const service = event.service ?? lineService(line);
  const unpaired: string[] = [];
  const url = await fileUrlSigner(); // not inside the transaction: PGlite has one connection
  let message: Message;
  try {
    message = await prismaUnitOfWork(async (unit) => {
      const { tx } = unit;
      const accountId = await routeAccount(tx, line, sender, text, now, unpaired);
      let chat: Chat;
      if (event.group) {
        const participants = [...new Set([sender, ...event.group.participants.map(normalizeHandle)])].filter(
          (p) => p !== line.handle,
        );
        const identifier = event.group.id ?? groupIdentifier(line.id, participants);
        chat = await upsertChat(tx, line, accountId, identifier, {
          isGroup: true,
          participants,
          name: event.group.name,
          service,
          providerChatId: event.providerChatId,
        });
      } else {
        chat = await directChat(tx, line, accountId, sender, event.providerChatId);
      }
      if (file && event.attachment) {
        await tx.file.create({
          data: {
            id: file.id,
            accountId,
            filename: event.attachment.filename,
            mimeType: event.attachment.mimeType,
            size: file.size,
            sha256: file.sha256,
            storageKey: file.storageKey,
          },
        });
      }
      const [written] = await writeMessages(
        unit,
        [
          {
            accountId,
            lineId: line.id,
            lineHandle: line.handle,
            chatId: chat.id,
            guid: event.guid ?? randomUUID().toUpperCase(),
            sender,
            text: text === "" ? null : text,
            isFromMe: false,
            isAudioMessage: event.attachment?.mimeType.startsWith("audio/") || isAudio ? isAudio : null,
            service,
            replyToGuid: event.replyToGuid ?? null,
            sentAt,
            attachments:
              file && event.attachment
                ? [{ fileId: file.id, filename: event.attachment.filename, mimeType: event.attachment.mimeType, size: file.size, transcription: isAudio ? (event.transcription ?? null) : null }]
                : [],
          },
        ],
        url,
      );
      // The same GUID taken in concurrently: the other request stored it. Nothing of this one stays.
      if (!written) throw new Repeat();
      unit.changed(unpaired);
      return written.message;
    });
  } catch (err) {
    // The same GUID taken in concurrently: the other request stored it (this one found it
    // stored, or lost the race to create the chat, P2002). This one is a repeat.
    if (!(err instanceof Repeat) && (err as { code?: unknown }).code !== "P2002") throw err;
    const existing = event.guid ? await db.message.findUnique({ where: { lineId_guid: { lineId: line.id, guid: event.guid } } }) : null;
    if (!existing) throw err;
    return { message: existing, created: false };
  }
  return { message, created: true };
}

/** The message was stored meanwhile by another request: this one's transaction rolls back. */
class Repeat extends Error {}

export async function ingestReaction(line: Line, event: WithoutLine<Extract<InboundEvent, { type: "reaction" }>>): Promise<Reaction> {
  const sender = normalizeHandle(event.sender);
  const sentAt = new Date(event.sentAt ?? Date.now());
  return prismaUnitOfWork(async (unit) => {
    const { tx } = unit;
    const accountId = await routeAccount(tx, line, sender, null, sentAt);
    const target = event.target.trim();
    const message = await tx.message.findFirst({
      where: { lineId: line.id, accountId, ...(target.startsWith("msg_") ? { id: target } : { guid: target }) },
    });
    if (!message) throw new ApiError("message_not_found", `No message with ID or GUID '${target}' on this line.`, { param: "message_id" });
    const reaction = await tx.reaction.upsert({
      where: { messageId_sender_type: { messageId: message.id, sender, type: event.reaction } },
      create: {
        id: newId("reaction"),
        accountId,
        chatId: message.chatId,
        messageId: message.id,
        type: event.reaction,
        sender,
        isFromMe: false,
        added: event.added,
        sentAt,
      },
      update: { added: event.added, sentAt, syncedAt: new Date() },
    });
    const data = { ...serializeReaction(reaction), line_handle: line.handle };
    await unit.fanOut([{ accountId, lineId: line.id, event: reaction.added ? "reaction.added" : "reaction.removed", data }]);
    unit.live([{ type: "chat.activity", accountId, lineId: line.id, chatId: message.chatId, kind: "reaction" }]);
    unit.changed([accountId]);
    return reaction;
  });
}

/** A contact's state in their direct chat (typing, read): routed to its account, the chat made if new, written by `write`. */
function inDirectChat<T>(
  line: Line,
  event: { sender: string; sentAt?: number },
  live: { kind: "typing" | "receipt"; typing?: boolean },
  write: (tx: Tx, chatId: string, handle: string, at: Date) => Promise<T>,
): Promise<T> {
  const sender = normalizeHandle(event.sender);
  const at = new Date(event.sentAt ?? Date.now());
  return prismaUnitOfWork(async (unit) => {
    const accountId = await routeAccount(unit.tx, line, sender, null, at);
    const chat = await directChat(unit.tx, line, accountId, sender);
    const row = await write(unit.tx, chat.id, sender, at);
    unit.live([{ type: "chat.activity", accountId, lineId: line.id, chatId: chat.id, ...live }]);
    unit.changed([accountId]);
    return row;
  });
}

export function ingestTyping(line: Line, event: WithoutLine<Extract<InboundEvent, { type: "typing" }>>): Promise<TypingIndicator> {
  return inDirectChat(line, event, { kind: "typing", typing: event.isTyping }, (tx, chatId, handle, at) =>
    tx.typingIndicator.upsert({
      where: { chatId_handle: { chatId, handle } },
      create: { id: newId("typing"), chatId, handle, isTyping: event.isTyping, updatedAt: at },
      update: { isTyping: event.isTyping, updatedAt: at },
    }),
  );
}

export function ingestReceipt(line: Line, event: WithoutLine<Extract<InboundEvent, { type: "receipt" }>>): Promise<ReadReceipt> {
  return inDirectChat(line, event, { kind: "receipt" }, (tx, chatId, handle, at) =>
    tx.readReceipt.upsert({
      where: { chatId_handle: { chatId, handle } },
      create: { id: newId("receipt"), chatId, handle, lastReadAt: at },
      update: { lastReadAt: at, syncedAt: new Date() },
    }),
  );
}

/** Entry point for platform bridges: validates the event and routes it by line ID. */
export async function ingestInbound(raw: InboundEvent) {
  const event = InboundEventSchema.parse(raw);
  const db = await getDb();
  const line = await db.line.findUnique({ where: { id: event.lineId } });
  if (!line) throw new ApiError("line_not_found", `No line with ID ${event.lineId}.`, { param: "line" });
  switch (event.type) {
    case "message":
      return ingestMessage(line, event);
    case "reaction":
      return ingestReaction(line, event);
    case "typing":
      return ingestTyping(line, event);
    case "receipt":
      return ingestReceipt(line, event);
  }
}

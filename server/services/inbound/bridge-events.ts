import { createHash, randomUUID } from "node:crypto";
import { getDb } from "../../db";
import type { Line, ReadReceipt, Reaction, TypingIndicator } from "../../generated/prisma/client";
import { ApiError, invalidParam } from "../../kernel/errors";
import { normalizeHandle } from "../../kernel/handles";
import type { StoredMessage } from "../../messages/store";
import { type BridgeEvent, BridgeEventSchema, type BridgeOf, type InboundEvent } from "../../platform/inbound-event";
import { storeBlob } from "../../storage/blobs";
import { type TakenIn, takeIn } from "./take-in";

// Events from an in-process bridge (the simulator, a test): checked as an API request is.

const lineService = (line: Line) => (line.service === "sms" ? "sms" : "imessage");

function groupIdentifier(lineId: string, participants: string[]): string {
  const digest = createHash("sha256").update(`${lineId}|${[...participants].sort().join(",")}`).digest("hex");
  return `chat${digest.slice(0, 24)}`;
}

async function storedMessage(lineId: string, guid: string): Promise<StoredMessage | null> {
  const db = await getDb();
  return db.message.findUnique({ where: { lineId_guid: { lineId, guid } }, include: { attachments: true } });
}

async function taken(line: Line, event: InboundEvent): Promise<TakenIn> {
  const result = await takeIn(line, event);
  if (result.refusal) throw result.refusal;
  return result;
}

export async function bridgeMessage(line: Line, event: BridgeOf<"message">): Promise<{ message: StoredMessage; created: boolean }> {
  const sender = normalizeHandle(event.sender);
  if (event.guid) {
    const existing = await storedMessage(line.id, event.guid);
    if (existing) return { message: existing, created: false };
  }
  const text = event.text || null;
  if (text === null && !event.attachment) {
    throw new ApiError("missing_required_parameter", "An inbound message needs text or an attachment.", { param: "text" });
  }
  if (line.isSandbox && event.group) throw invalidParam("group", "The sandbox line does not take group chats.");
  const isAudio = event.isAudioMessage === true;
  if (isAudio && !event.attachment?.mimeType.startsWith("audio/")) {
    throw invalidParam("attachment", "A voice memo (is_audio_message true) needs an audio attachment.");
  }
  const service = event.service ?? lineService(line);
  const participants = event.group ? [...new Set([sender, ...event.group.participants.map(normalizeHandle)])].filter((p) => p !== line.handle) : [sender];
  const identifier = event.group ? (event.group.id ?? groupIdentifier(line.id, participants)) : sender;
  const guid = event.guid ?? randomUUID().toUpperCase();
  const blob = event.attachment ? await storeBlob(event.attachment.content) : null;
  const result = await taken(line, {
    type: "message",
    guid,
    sender,
    isFromMe: false,
    at: event.sentAt ?? Date.now(),
    chat: { identifier, isGroup: !!event.group, participants, name: event.group?.name ?? null, service, providerChatId: event.providerChatId ?? null, existingOnly: false },
    text,
    file: blob && event.attachment ? { filename: event.attachment.filename, mimeType: event.attachment.mimeType, blob, transcription: isAudio ? (event.transcription ?? null) : null } : null,
    isAudioMessage: event.attachment?.mimeType.startsWith("audio/") || isAudio ? isAudio : null,
    replyToGuid: event.replyToGuid ?? null,
    service,
    optOut: null,
  });
  if (result.outcome === "stored") return { message: result.row as StoredMessage, created: true };
  // Taken in concurrently by another request: that one is the message.
  const existing = await storedMessage(line.id, guid);
  if (!existing) throw new Error(`inbound message ${guid} was neither stored nor found`);
  return { message: existing, created: false };
}

export async function bridgeReaction(line: Line, event: BridgeOf<"reaction">): Promise<Reaction> {
  const sender = normalizeHandle(event.sender);
  const at = event.sentAt ?? Date.now();
  return (await taken(line, { type: "reaction", sender, at, target: event.target, reaction: event.reaction, added: event.added, once: null })).row as Reaction;
}

export async function bridgeTyping(line: Line, event: BridgeOf<"typing">): Promise<TypingIndicator> {
  const at = event.sentAt ?? Date.now();
  return (await taken(line, { type: "typing", sender: normalizeHandle(event.sender), at, isTyping: event.isTyping })).row as TypingIndicator;
}

export async function bridgeReceipt(line: Line, event: BridgeOf<"receipt">): Promise<ReadReceipt> {
  const at = event.sentAt ?? Date.now();
  return (await taken(line, { type: "receipt", sender: normalizeHandle(event.sender), at, once: null })).row as ReadReceipt;
}

export async function ingestInbound(raw: BridgeEvent) {
  const event = BridgeEventSchema.parse(raw);
  const db = await getDb();
  const line = await db.line.findUnique({ where: { id: event.lineId } });
  if (!line) throw new ApiError("line_not_found", `No line with ID ${event.lineId}.`, { param: "line" });
  switch (event.type) {
    case "message":
      return bridgeMessage(line, event);
    case "reaction":
      return bridgeReaction(line, event);
    case "typing":
      return bridgeTyping(line, event);
    case "receipt":
      return bridgeReceipt(line, event);
  }
}

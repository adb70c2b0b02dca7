import { sql } from "../../db";
import type { Line } from "../../generated/prisma/client";
import { normalizeHandle } from "../../kernel/handles";
import { adoptSent, inFlightMessages } from "../../outbox/record";
import { sameContent } from "../../platform/matching";
import type { ProviderInbound } from "../../platform/types";


type MessageEvent = Extract<ProviderInbound, { kind: "message" }>;

async function chatHasProviderId(chatId: string, providerChatId: string): Promise<boolean> {
  const rows = await sql(`SELECT 1 FROM "Chat" WHERE id = $1 AND "providerChatId" = $2`, [chatId, providerChatId]);
  return rows.length > 0;
}

export async function adoptOwnEcho(line: Line, event: MessageEvent): Promise<boolean> {
  const sent = { guid: event.guid, sentAt: event.sentAt, service: event.service ?? undefined, providerChatId: event.providerChatId ?? undefined };
  const theirs = { text: event.text, attachmentNames: event.attachments.map((a) => a.filename) };
  // A later part of a message sent in parts (tempGuid "obx_….text"): recorded by its item's own send.
  if (event.tempGuid?.startsWith("obx_") && event.tempGuid.includes(".")) return true;
  const inFlight = await inFlightMessages(line.id);
  for (const item of inFlight) {
    // Adopted only when the echo carries the whole item: its first part alone is not the message sent.
    const whole = sameContent({ text: item.payload.text, attachmentNames: item.fileNames }, theirs);
    if (item.id === event.tempGuid) return whole ? (await adoptSent(item.id, sent)) || true : true;
  }
  for (const item of inFlight) {
    // One part of a message sent in parts (its text, or one attachment) is ours too.
    const parts = [...(item.payload.text ? [{ text: item.payload.text, attachmentNames: [] }] : []), ...item.fileNames.map((n) => ({ text: null, attachmentNames: [n] }))];
    const isPart = parts.length > 1 && parts.some((p) => sameContent(p, theirs));
    if (isPart && (item.payload.to === (event.group?.id ?? normalizeHandle(event.sender)) || (event.providerChatId !== null && (await chatHasProviderId(item.payload.chat_id, event.providerChatId))))) return true;
    const sameChat = item.payload.to === (event.group?.id ?? normalizeHandle(event.sender)) || (event.providerChatId !== null && (await chatHasProviderId(item.payload.chat_id, event.providerChatId)));
    if (sameChat && sameContent({ text: item.payload.text, attachmentNames: item.fileNames }, theirs) && (await adoptSent(item.id, sent))) return true;
  }
  return false;
}

import { sql } from "../../db";
import { storableDeep } from "../../db/storable";
import type { Line } from "../../generated/prisma/client";
import { ApiError } from "../../kernel/errors";
import { normalizeHandle } from "../../kernel/handles";
import { log } from "../../kernel/log";
import type { InboundEvent } from "../../platform/inbound-event";
import type { ProviderLine } from "../../platform/provider";
import type { DeliveryReport, ProviderInbound } from "../../platform/types";
import { findLine } from "../lines/lines";
import { adoptOwnEcho } from "./own-echoes";
import { receiveMedia } from "./provider-media";
import { type InboundOutcome, takeIn } from "./take-in";


export type { InboundOutcome };

type MessageEvent = Extract<ProviderInbound, { kind: "message" }>;

async function knownGuid(lineId: string, guid: string): Promise<boolean> {
  const rows = await sql(`SELECT 1 FROM "Message" WHERE "lineId" = $1 AND guid = $2`, [lineId, guid]);
  return rows.length > 0;
}

const lineService = (line: Line) => (line.service === "sms" ? "sms" : "imessage");

function ownMessage(line: Line, event: MessageEvent): InboundEvent {
  const contact = normalizeHandle(event.sender);
  const chat = event.group
    ? { identifier: event.group.id, isGroup: true, participants: [], existingOnly: true }
    : { identifier: contact, isGroup: false, participants: [contact], existingOnly: false };
  return {
    type: "message",
    guid: event.guid,
    sender: line.handle,
    isFromMe: true,
    at: event.sentAt,
    chat: { ...chat, name: null, service: lineService(line), providerChatId: event.providerChatId },
    text: event.text || null,
    file: null,
    isAudioMessage: null,
    replyToGuid: event.replyToGuid,
    service: event.service ?? lineService(line),
    optOut: null,
  };
}

async function contactMessage(line: Line, pl: ProviderLine, event: MessageEvent): Promise<InboundEvent | null> {
  const { file, text } = await receiveMedia(line, pl, event.guid, event.text, event.attachments);
  if (!text && !file) return null;
  const sender = normalizeHandle(event.sender);
  const service = event.service ?? lineService(line);
  const participants = event.group ? [...new Set([sender, ...event.group.participants.map(normalizeHandle)])].filter((p) => p !== line.handle) : [sender];
  return {
    type: "message",
    guid: event.guid,
    sender,
    isFromMe: false,
    at: event.sentAt,
    chat: { identifier: event.group?.id ?? sender, isGroup: !!event.group, participants, name: event.group?.name ?? null, service, providerChatId: event.providerChatId, existingOnly: false },
    text: text || null,
    file,
    isAudioMessage: file?.mimeType.startsWith("audio/") ? event.isAudioMessage : null,
    replyToGuid: event.replyToGuid,
    service,
    optOut: event.optOut ?? null,
  };
}

async function normalize(line: Line, pl: ProviderLine, event: ProviderInbound): Promise<InboundEvent | InboundOutcome> {
  switch (event.kind) {
    case "message":
      // The message store's insert decides whether a plain text is new: no read of its own on the hot path.
      if (!event.isFromMe && !event.attachments.length) return (await contactMessage(line, pl, event)) ?? "ignored";
      if (await knownGuid(line.id, event.guid)) return "duplicate";
      if (event.isFromMe) return (await adoptOwnEcho(line, event)) ? "adopted" : ownMessage(line, event);
      return (await contactMessage(line, pl, event)) ?? "ignored";
    case "reaction":
      if (event.isFromMe) return "ignored"; // ours are recorded when sent
      return { type: "reaction", sender: normalizeHandle(event.sender), at: event.sentAt, target: event.targetGuid, reaction: event.reaction, added: event.added, once: `reaction:${event.guid}` };
    case "typing":
      return { type: "typing", sender: normalizeHandle(event.sender), at: Date.now(), isTyping: event.isTyping };
    case "read":
      if (!event.sender) return "ignored";
      return { type: "receipt", sender: normalizeHandle(event.sender), at: event.readAt, once: `read:${event.guid}:${event.readAt}` };
    case "status":
      return { type: "delivery", guid: event.guid, report: { status: event.status, at: event.at, reason: event.reason }, segments: event.segments };
    case "send-error":
      log().warn({ line_id: line.id, guid: event.guid, reason: event.reason }, "the provider reports a message failed after sending");
      return "ignored";
    case "ignored":
      return "ignored";
  }
}

/** Events that cannot be placed are logged, never thrown. */
export async function ingestProviderEvent(line: Line, pl: ProviderLine, mapped: ProviderInbound): Promise<InboundOutcome> {
  // NUL characters and lone surrogates, which neither database stores, become U+FFFD.
  const event = storableDeep(mapped);
  try {
    const normalized = await normalize(line, pl, event);
    if (typeof normalized === "string") return normalized;
    const taken = await takeIn(line, normalized, true);
    if (taken.refusal) throw taken.refusal;
    return taken.outcome;
  } catch (err) {
    // A refusal of the event itself is final; a failure of ours (5xx) is answered as such.
    if (err instanceof ApiError && err.status < 500) {
      log().warn({ line_id: line.id, kind: event.kind, code: err.code, reason: err.message }, "inbound event not taken in");
      return "ignored";
    }
    throw err;
  }
}

export async function receiveDeliveryReport(lineId: string, guid: string, report: DeliveryReport, segments: number | null): Promise<"stored" | "duplicate"> {
  const line = await findLine(lineId);
  if (!line) throw new ApiError("line_not_found", `No line with ID ${lineId}.`, { param: "line" });
  const { outcome } = await takeIn(line, { type: "delivery", guid, report, segments });
  return outcome === "stored" ? "stored" : "duplicate";
}

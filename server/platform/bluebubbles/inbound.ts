import type { ProviderAttachmentRef, ProviderInbound, ServiceName } from "../types";
import { type BBMessage, type BBMessageChat, parseWebhookEvent, stripAssociatedPrefix } from "./client";

// Webhooks carry the notification shape of a message (no isAudioMessage or replyToGuid;
// updated-message has no chats); catch-up reads the full shape. Both go through mapMessage.

const REACTIONS = ["love", "like", "dislike", "laugh", "emphasize", "question"] as const;
type Reaction = (typeof REACTIONS)[number];

/** The address after ";-;" in a 1:1 chat GUID ("any;-;+1555…" on macOS 26, "iMessage;-;…", "SMS;-;…"). */
export function chatAddress(chatGuid: string): string | null {
  const i = chatGuid.indexOf(";-;");
  return i >= 0 ? chatGuid.slice(i + 3) || null : null;
}

const isGroupGuid = (chatGuid: string) => chatGuid.includes(";+;");

function serviceOf(chat: BBMessageChat | undefined, m: BBMessage): ServiceName | null {
  const prefix = chat?.guid.split(";")[0]?.toLowerCase();
  if (prefix === "sms") return "sms";
  if (prefix === "imessage") return "imessage";
  const handleService = m.handle?.service?.toLowerCase();
  if (handleService === "sms") return "sms";
  if (handleService === "imessage") return "imessage";
  return null;
}

function attachmentsOf(m: BBMessage): ProviderAttachmentRef[] {
  return (m.attachments ?? [])
    .filter((a) => !a.hideAttachment)
    .map((a) => ({
      ref: a.guid,
      filename: a.transferName ?? a.guid,
      mimeType: a.mimeType ?? (a.uti === "com.apple.coreaudio-format" ? "audio/x-caf" : "application/octet-stream"),
      size: a.totalBytes ?? null,
    }));
}

function isVoiceMemo(m: BBMessage): boolean {
  if (m.isAudioMessage) return true;
  return (m.attachments ?? []).some((a) => a.uti === "com.apple.coreaudio-format" || a.mimeType === "audio/x-caf");
}

export function mapMessage(m: BBMessage): ProviderInbound {
  const chat = m.chats?.[0];
  const chatGuid = chat?.guid ?? null;
  if (m.itemType !== undefined && m.itemType !== null && m.itemType !== 0) {
    return { kind: "ignored", reason: `group event (itemType ${m.itemType})` };
  }
  // Messages recorded an error for it (22: not registered): it was not delivered, never "sent".
  if (m.isFromMe && m.error) {
    return { kind: "send-error", guid: m.guid, tempGuid: m.tempGuid ?? null, reason: `Messages recorded error ${m.error} for it` };
  }
  const group = chatGuid && isGroupGuid(chatGuid) ? chat! : null;
  // The contact: the sender of an inbound message; for our own in a 1:1 chat, the other party.
  const contact = m.isFromMe ? (chatGuid && !group ? chatAddress(chatGuid) : null) ?? m.handle?.address ?? null : m.handle?.address ?? null;
  const type = m.associatedMessageType;
  if (type && m.associatedMessageGuid) {
    const added = !type.startsWith("-");
    const name = (added ? type : type.slice(1)) as Reaction;
    if (!REACTIONS.includes(name)) return { kind: "ignored", reason: `associated message type ${type}` };
    if (!contact && !m.isFromMe) return { kind: "ignored", reason: "reaction without a sender handle" };
    return {
      kind: "reaction",
      guid: m.guid,
      sender: contact ?? "",
      isFromMe: m.isFromMe,
      providerChatId: chatGuid,
      targetGuid: stripAssociatedPrefix(m.associatedMessageGuid),
      reaction: name,
      added,
      sentAt: m.dateCreated,
    };
  }
  if (!contact && !(m.isFromMe && group)) return { kind: "ignored", reason: "message without a sender handle" };
  const participants = group?.participants?.map((p) => p.address).filter((a): a is string => !!a) ?? [];
  return {
    kind: "message",
    guid: m.guid,
    sender: contact ?? "",
    isFromMe: m.isFromMe,
    tempGuid: m.tempGuid ?? null,
    providerChatId: chatGuid,
    group: group
      ? { id: group.chatIdentifier ?? group.guid, participants: participants.length ? participants : contact ? [contact] : [], name: group.displayName || null }
      : null,
    text: m.text ? m.text : null,
    attachments: attachmentsOf(m),
    isAudioMessage: isVoiceMemo(m),
    replyToGuid: m.threadOriginatorGuid ?? m.replyToGuid ?? null,
    service: serviceOf(chat, m),
    sentAt: m.dateCreated,
  };
}

export function mapWebhook(body: unknown): ProviderInbound[] {
  const event = parseWebhookEvent(body);
  switch (event.type) {
    case "new-message":
      return [mapMessage(event.data)];
    case "updated-message": {
      const m = event.data;
      // Our own message read by the contact: a read receipt. Other updates (delivered, edited) change nothing we keep.
      if (m.isFromMe && m.dateRead) {
        return [{ kind: "read", guid: m.guid, sender: m.handle?.address ?? null, providerChatId: null, readAt: m.dateRead }];
      }
      return [{ kind: "ignored", reason: "message update" }];
    }
    case "message-send-error":
      return [
        {
          kind: "send-error",
          guid: event.data.guid,
          tempGuid: event.data.tempGuid ?? null,
          reason: `BlueBubbles reports message error ${event.data.error ?? "unknown"}`,
        },
      ];
    case "typing-indicator": {
      const address = chatAddress(event.data.guid);
      if (!address || isGroupGuid(event.data.guid)) return [{ kind: "ignored", reason: "typing in a group chat" }];
      return [{ kind: "typing", sender: address, providerChatId: event.data.guid, isTyping: event.data.display }];
    }
    case "chat-read-status-changed":
      // The Mac's own read state (our mark-read echoed back), not the contact's.
      return [{ kind: "ignored", reason: "read state of the Mac's own user" }];
    default:
      return [{ kind: "ignored", reason: `event ${event.name}` }];
  }
}

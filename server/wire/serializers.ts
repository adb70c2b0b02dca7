import type {
  ApiKey,
  Attachment,
  Chat,
  Line,
  Message,
  OutboxItem,
  Reaction,
  ReadReceipt,
  TypingIndicator,
  Webhook,
} from "../generated/prisma/client";
import type { LineProvider } from "./responses";
import type { FileUrlSigner } from "../storage/signed-urls";

// One serializer per resource: the JSON shapes of SPEC.md + COMPAT.md (snake_case, Unix ms).

import { policyOf } from "../policy/line-send-policy";
import { serializeGuardrails } from "../policy/key-guardrails";

const ms = (d: Date) => d.getTime();
export const msOrNull = (d: Date | null) => (d ? d.getTime() : null);

export function serializeLine(line: Line) {
  return {
    object: "line" as const,
    id: line.id,
    handle: line.handle,
    label: line.label,
    service: line.service,
    is_active: line.isActive,
    advanced_features: line.advancedFeatures,
    is_sandbox: line.isSandbox,
    created_at: ms(line.createdAt),
    provider: line.provider as LineProvider,
    status: line.status as "connected" | "degraded" | "disconnected",
    status_reason: line.statusReason,
    last_event_at: msOrNull(line.lastEventAt),
    send_policy: policyOf(line),
  };
}

export function serializeChat(chat: Chat) {
  return {
    object: "chat" as const,
    id: chat.id,
    line_id: chat.lineId,
    identifier: chat.identifier,
    service: chat.service,
    name: chat.name,
    is_group: chat.isGroup,
    participants: chat.participants,
    has_received_inbound: chat.hasReceivedInbound,
    last_message_at: msOrNull(chat.lastMessageAt),
    created_at: ms(chat.createdAt),
    paused_at: msOrNull(chat.pausedAt),
    paused_by: chat.pausedBy,
  };
}

export type MessageWithAttachments = Message & { attachments: Attachment[] };

function serializeAttachment(a: Attachment, url: FileUrlSigner) {
  return {
    id: a.id,
    file_id: a.fileId,
    filename: a.filename,
    mime_type: a.mimeType,
    size: a.size,
    url: url(a.fileId),
    transcription: a.transcription,
  };
}

export function serializeMessage(m: MessageWithAttachments, url: FileUrlSigner) {
  return {
    object: "message" as const,
    id: m.id,
    line_id: m.lineId,
    chat_id: m.chatId,
    guid: m.guid,
    sender: m.sender,
    text: m.text,
    attachments: [...m.attachments].sort((a, b) => a.position - b.position).map((a) => serializeAttachment(a, url)),
    is_from_me: m.isFromMe,
    is_audio_message: m.isAudioMessage,
    service: m.service,
    outbox_id: m.outboxId,
    sent_at: ms(m.sentAt),
    synced_at: ms(m.syncedAt),
    reply_to_guid: m.replyToGuid,
    delivery_status: m.deliveryStatus as "sent" | "delivered" | "undelivered" | "failed" | null,
    delivered_at: msOrNull(m.deliveredAt),
    delivery_error: m.deliveryError,
    fallback: m.fallback ?? false,
  };
}

export function serializeReaction(r: Reaction) {
  return {
    object: "reaction" as const,
    id: r.id,
    message_id: r.messageId,
    chat_id: r.chatId,
    type: r.type,
    sender: r.sender,
    is_from_me: r.isFromMe,
    added: r.added,
    sent_at: ms(r.sentAt),
    synced_at: ms(r.syncedAt),
  };
}

/** Typing older than this is reported as stopped: the platform's indicators time out too. */
const TYPING_TTL_MS = 60_000;

export function serializeTyping(t: TypingIndicator, now = Date.now()) {
  return {
    object: "typing_indicator" as const,
    id: t.id,
    chat_id: t.chatId,
    handle: t.handle,
    is_typing: t.isTyping && now - t.updatedAt.getTime() < TYPING_TTL_MS,
    updated_at: ms(t.updatedAt),
  };
}

export function serializeReceipt(r: ReadReceipt) {
  return {
    object: "read_receipt" as const,
    id: r.id,
    chat_id: r.chatId,
    handle: r.handle,
    last_read_at: ms(r.lastReadAt),
    synced_at: ms(r.syncedAt),
  };
}

/** The due time of a hold that only a person or a policy change ends (server/policy/hold-reasons.ts NEVER). */
const NEVER_MS = Date.UTC(9999, 11, 31);

/** What is in the way of a pending item that is due, read from its line's state (not stored). */
type StoredHoldReason = "scheduled" | "quiet_hours" | "new_contact_budget" | "approval";

export interface LineHold {
  reason: "line_rate" | "line_unavailable";
  until: Date | null;
}

export function serializeOutboxItem(o: OutboxItem, lineHold: LineHold | null = null) {
  // Held items are `pending` on the wire: clients parse status as a strict enum.
  const held = o.status === "held";
  const hold = held ? { reason: (o.holdReason ?? "scheduled") as StoredHoldReason, until: o.availableAt.getTime() >= NEVER_MS ? null : o.availableAt } : o.status === "pending" ? lineHold : null;
  return {
    object: "outbox_item" as const,
    id: o.id,
    line_id: o.lineId,
    kind: o.kind,
    status: held ? "pending" : o.status,
    not_before: hold?.until ? hold.until.getTime() : null,
    hold_reason: hold?.reason ?? null,
    canceled_at: msOrNull(o.canceledAt),
    pool_id: o.poolId,
    fallback: o.fallback ?? false,
    error: o.error,
    attempts: o.attempts,
    max_attempts: o.maxAttempts,
    created_at: ms(o.createdAt),
    completed_at: msOrNull(o.completedAt),
    segments: o.segments,
    payload: o.payload,
  };
}

/** The signing secret appears only in the create (and rotate) response. */
export function serializeWebhook(w: Webhook, options: { secret?: string } = {}) {
  return {
    object: "webhook" as const,
    id: w.id,
    line_ids: [w.lineId],
    url: w.url,
    events: w.events,
    is_active: w.isActive,
    disabled_reason: w.disabledReason,
    created_at: ms(w.createdAt),
    ...(options.secret ? { secret: options.secret } : {}),
  };
}

/** An API key as its owner sees it (dashboard): never the secret. */
export function serializeApiKey(key: ApiKey, now = Date.now()) {
  return {
    object: "api_key" as const,
    id: key.id,
    name: key.name,
    prefix: key.prefix,
    scopes: key.scopes,
    line_ids: key.lineRestricted ? key.lineIds : null,
    expires_at: msOrNull(key.expiresAt),
    revoked_at: msOrNull(key.revokedAt),
    last_used_at: msOrNull(key.lastUsedAt),
    created_at: key.createdAt.getTime(),
    guardrails: serializeGuardrails(key),
    status: key.revokedAt ? ("revoked" as const) : key.expiresAt && key.expiresAt.getTime() <= now ? ("expired" as const) : ("active" as const),
  };
}

import { z } from "zod";

// BlueBubbles Server 1.9.9's JSON (sources: docs/providers.md, "Provider schemas"). Lenient where
// the server is; strict only where we rely on a field. Webhooks carry the notification shape
// (`isForNotification`), which lacks isAudioMessage, replyToGuid, isSpam, …: optional here.

function nullable<T extends z.ZodType>(schema: T) {
  return schema.nullish().transform((v): z.output<T> | null => (v ?? null) as z.output<T> | null);
}

/** A boolean the server always sends (BooleanTransformer maps NULL to false): absent → false. */
const flag = z
  .boolean()
  .nullish()
  .transform((v) => v ?? false);

/** DB default 0: absent or null → 0. */
const zeroDefault = z
  .number()
  .nullish()
  .transform((v) => v ?? 0);

const BBHandleSchema = z.object({
  originalROWID: nullable(z.number()),
  address: z.string(),
  service: nullable(z.string()),
  uncanonicalizedId: z.string().nullish(),
  country: z.string().nullish(),
});

// Attachment: `mimeType` is the raw DB column (may be null); the download route sets its own Content-Type.

const BBAttachmentSchema = z.object({
  originalROWID: nullable(z.number()),
  guid: z.string(),
  uti: nullable(z.string()),
  mimeType: nullable(z.string()),
  transferName: nullable(z.string()),
  totalBytes: nullable(z.number()),
  transferState: z.number().nullish(),
  isOutgoing: z.boolean().nullish(),
  hideAttachment: z.boolean().nullish(),
  isSticker: z.boolean().nullish(),
  originalGuid: z.string().nullish(),
  hasLivePhoto: z.boolean().nullish(),
  height: z.number().nullish(),
  width: z.number().nullish(),
  metadata: z.record(z.string(), z.unknown()).nullish(),
});

// A message's `chats[]`: style 43 = group, 45 = DM.

const chatFields = {
  originalROWID: nullable(z.number()),
  guid: z.string(),
  style: nullable(z.number()),
  chatIdentifier: nullable(z.string()),
  isArchived: flag,
  displayName: nullable(z.string()),
  participants: z.array(BBHandleSchema).optional(),
  isFiltered: z.boolean().nullish(),
  groupId: z.string().nullish(),
  properties: z.unknown().optional(),
  lastAddressedHandle: z.string().nullish(),
};

const BBMessageChatSchema = z.object(chatFields);
export type BBMessageChat = z.output<typeof BBMessageChatSchema>;

export const BBMessageSchema = z.object({
  originalROWID: nullable(z.number()),
  guid: z.string().min(1),
  /** universalText(true): U+FFFC removed and trimmed; "" for an attachment-only message. */
  text: nullable(z.string()),
  attributedBody: z.unknown().optional(),
  handle: nullable(BBHandleSchema),
  handleId: zeroDefault,
  otherHandle: nullable(z.number()),
  attachments: z
    .array(BBAttachmentSchema)
    .nullish()
    .transform((v) => v ?? []),
  subject: nullable(z.string()),
  /** Apple's message error code; 0 = none (e.g. 4 = timeout per BB/index.ts emitMessageError; 22 seen for "not registered"). */
  error: zeroDefault,
  dateCreated: z.number(),
  dateRead: nullable(z.number()),
  dateDelivered: nullable(z.number()),
  isDelivered: flag,
  isFromMe: z.boolean(),
  hasDdResults: flag,
  isArchived: flag,
  itemType: zeroDefault,
  groupTitle: nullable(z.string()),
  groupActionType: zeroDefault,
  balloonBundleId: nullable(z.string()),
  /** Target of a reaction/sticker, e.g. "p:0/<GUID>" or "bp:<GUID>" (see stripAssociatedPrefix). */
  associatedMessageGuid: nullable(z.string()),
  /** "love".."question", "-love".."-question", "sticker" or a raw number (stringified); null for ordinary messages. */
  associatedMessageType: z
    .union([z.string(), z.number()])
    .nullish()
    .transform((v) => (v == null ? null : String(v))),
  expressiveSendStyleId: nullable(z.string()),
  threadOriginatorGuid: nullable(z.string()),
  hasPayloadData: flag,
  /** Only when chats were loaded (REST `with: ["chat"]`, a chatGuid query, webhooks except updated-message). */
  chats: z.array(BBMessageChatSchema).optional(),
  /** Only in the text-send response (and chat/new messages) and in webhooks that match a send. */
  tempGuid: z.string().optional(),
  isAudioMessage: z.boolean().nullish(),
  replyToGuid: z.string().nullish(),
  threadOriginatorPart: z.string().nullish(),
  // Fields we never read: accepted whatever their type, so that another server version's
  // representation of them (a number for a flag, say) never makes a whole message unreadable.
  isSpam: z.unknown().optional(),
  isDelayed: z.unknown().optional(),
  isAutoReply: z.unknown().optional(),
  isSystemMessage: z.unknown().optional(),
  isServiceMessage: z.unknown().optional(),
  isForward: z.unknown().optional(),
  isCorrupt: z.unknown().optional(),
  isExpired: z.unknown().optional(),
  country: z.unknown().optional(),
  cacheRoomnames: z.unknown().optional(),
  datePlayed: z.unknown().optional(),
  timeExpressiveSendPlayed: z.unknown().optional(),
  shareStatus: z.unknown().optional(),
  shareDirection: z.unknown().optional(),
  wasDeliveredQuietly: z.unknown().optional(),
  didNotifyRecipient: z.unknown().optional(),
  dateEdited: z.unknown().optional(),
  dateRetracted: z.unknown().optional(),
  partCount: z.unknown().optional(),
  messageSummaryInfo: z.unknown().optional(),
  payloadData: z.unknown().optional(),
});
export type BBMessage = z.output<typeof BBMessageSchema>;

// POST /api/v1/chat/new: messages without `chats`, with tempGuid injected when one was given.

export const BBChatSchema = z.object({
  ...chatFields,
  messages: z.array(BBMessageSchema).optional(),
  lastMessage: BBMessageSchema.nullish(),
});
export type BBChat = z.output<typeof BBChatSchema>;

// GET /api/v1/server/info: config booleans come as boolean, 0/1 or "true"/"false"/"1"/"0".

const configBool = z
  .union([z.boolean(), z.number(), z.string()])
  .nullish()
  .transform((v) => v === true || v === 1 || v === "1" || v === "true");

export const BBServerInfoSchema = z.object({
  computer_id: nullable(z.string()),
  os_version: nullable(z.string()),
  server_version: nullable(z.string()),
  private_api: configBool,
  helper_connected: configBool,
  proxy_service: nullable(z.string()),
  detected_icloud: nullable(z.string()),
  detected_imessage: nullable(z.string()),
  macos_time_sync: nullable(z.number()),
  local_ipv4s: z.array(z.string()).nullish(),
  local_ipv6s: z.array(z.string()).nullish(),
});
export type BBServerInfo = z.output<typeof BBServerInfoSchema>;

/** Private API usable ⇔ enabled and the helper is connected (same checks as checkPrivateApiStatus). */
export function privateApiUsable(info: BBServerInfo): boolean {
  return info.private_api && info.helper_connected;
}

export const BBWebhookSchema = z.object({
  id: z.number().int(),
  url: z.string(),
  events: z.array(z.string()),
  created: z
    .union([z.string(), z.number()])
    .nullish()
    .transform((v) => v ?? null),
});
export type BBWebhook = z.output<typeof BBWebhookSchema>;

const BB_WEBHOOK_EVENTS = [
  "*",
  "new-message",
  "updated-message",
  "message-send-error",
  "group-name-change",
  "group-icon-changed",
  "group-icon-removed",
  "participant-removed",
  "participant-added",
  "participant-left",
  "chat-read-status-changed",
  "typing-indicator",
  "scheduled-message-error",
  "server-update",
  "new-server",
  "new-findmy-location",
  "hello-world",
  "incoming-facetime",
  "ft-call-status-changed",
] as const;
export type BBWebhookEventName = (typeof BB_WEBHOOK_EVENTS)[number];

const BB_REACTIONS = [
  "love",
  "like",
  "dislike",
  "laugh",
  "emphasize",
  "question",
  "-love",
  "-like",
  "-dislike",
  "-laugh",
  "-emphasize",
  "-question",
] as const;
export type BBReaction = (typeof BB_REACTIONS)[number];

export function stripAssociatedPrefix(guid: string): string {
  return guid.replace(/^(?:p:\d+\/|bp:)/, "");
}

export const BBWebhookEventSchema = z.object({ type: z.string().min(1), data: z.unknown() });

/** 1:1 chats only. */
const BBTypingIndicatorSchema = z.object({ display: z.boolean(), guid: z.string() });
const BBChatReadStatusSchema = z.object({ chatGuid: z.string(), read: z.boolean() });

export type BBWebhookEvent =
  | { type: "new-message" | "updated-message" | "message-send-error"; data: BBMessage }
  | { type: "typing-indicator"; data: { display: boolean; guid: string } }
  | { type: "chat-read-status-changed"; data: { chatGuid: string; read: boolean } }
  | { type: "other"; name: string; data: unknown };

/** Unknown event types (group-name-change, participant-*, …) come back as `{type: "other"}`, `data` unvalidated. */
export function parseWebhookEvent(body: unknown): BBWebhookEvent {
  const { type, data } = BBWebhookEventSchema.parse(body);
  switch (type) {
    case "new-message":
    case "updated-message":
    case "message-send-error":
      return { type, data: BBMessageSchema.parse(data) };
    case "typing-indicator":
      return { type, data: BBTypingIndicatorSchema.parse(data) };
    case "chat-read-status-changed":
      return { type, data: BBChatReadStatusSchema.parse(data) };
    default:
      return { type: "other", name: type, data };
  }
}

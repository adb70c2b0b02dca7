import { z } from "zod";

// Zod schemas of the JSON that SMS Gateway for Android answers and posts. Sources: the app
// (capcom6/android-sms-gateway 0cdc5d8: modules/localserver/{WebService.kt, routes/*,
// domain/messages/*}, modules/webhooks/{domain,payload}/*, extensions/GsonBuilder.kt), the
// cloud server (android-sms-gateway/server, handlers/*/3rdparty.go) and the bundled OpenAPI
// document (tests/specs/sms-gateway.openapi.json). See PLATFORMS.md section 2.
//
// The app serializes with Gson, which leaves out null fields: every field we do not rely on
// is optional and nullable. Dates are ISO 8601 with the device's offset
// ("2025-03-14T07:29:55.000+07:00"); the cloud writes UTC ("2020-01-01T00:00:00Z").

const ISO_DATE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/;

/** Unix ms of an ISO 8601 date with an offset or Z, or null when it is not one. */
export function parseIsoDate(value: string): number | null {
  if (!ISO_DATE.test(value)) return null;
  // "+0700" (no colon) is ISO 8601 too, but not every Date.parse reads it.
  const ms = Date.parse(value.replace(/([+-]\d{2})(\d{2})$/, "$1:$2"));
  return Number.isFinite(ms) ? ms : null;
}

/** An ISO 8601 date with an offset, as Unix ms. */
const IsoDateSchema = z.string().transform((value, ctx) => {
  const ms = parseIsoDate(value);
  if (ms === null) {
    ctx.addIssue({ code: "custom", message: "must be an ISO 8601 date with an offset" });
    return z.NEVER;
  }
  return ms;
});

// ------------------------------------------------------------------------------------------------
// Messages: POST /messages (202) and GET /messages/{id} answer the message's state
// (localserver/domain/messages/Message.kt; cloud smsgateway.GetMessageResponse).

const SGRecipientSchema = z.object({
  /** The number as sent, or the first 16 characters of its SHA-256 when the message is hashed. */
  phoneNumber: z.string(),
  /**
   * ProcessingState.kt: Pending, Processed, Sent, Delivered, Failed, Cancelling, Cancelled (the
   * spec's enum lacks the last two). Other names are kept as given.
   */
  state: z.string(),
  /** The failure reason of a Failed recipient. */
  error: z.string().nullish(),
});

export const SGMessageStateSchema = z.object({
  id: z.string().min(1),
  deviceId: z.string().nullish(),
  state: z.string(),
  isHashed: z.boolean().nullish(),
  isEncrypted: z.boolean().nullish(),
  recipients: z.array(SGRecipientSchema),
  /** State name → when it was entered (ISO dates; read with parseIsoDate). */
  states: z
    .record(z.string(), z.string())
    .nullish()
    .transform((v) => v ?? {}),
  textMessage: z.object({ text: z.string() }).nullish(),
  scheduleAt: z.string().nullish(),
});
export type SGMessageState = z.output<typeof SGMessageStateSchema>;

// ------------------------------------------------------------------------------------------------
// Webhook registrations: POST /webhooks (201), GET /webhooks (webhooks/domain/WebHookDTO.kt;
// cloud smsgateway.Webhook). One event per registration; upserted by `id`.

/** Events the app emits (webhooks/domain/WebHookEvent.kt); the spec's enum lacks the last two. */
const SG_WEBHOOK_EVENTS = [
  "sms:received",
  "sms:sent",
  "sms:delivered",
  "sms:failed",
  "system:ping",
  "sms:data-received",
  "mms:received",
  "mms:downloaded",
  "app:started",
  "sms:cancelled",
] as const;
export type SGWebhookEventName = (typeof SG_WEBHOOK_EVENTS)[number];

export const SGWebhookSchema = z.object({
  id: z.string(),
  url: z.string(),
  event: z.string(),
  deviceId: z.string().nullish(),
  /** Local, Cloud or Gateway (local server only). */
  source: z.string().nullish(),
});
export type SGWebhook = z.output<typeof SGWebhookSchema>;

// ------------------------------------------------------------------------------------------------
// Received messages: GET /inbox (localserver/routes/InboxRoutes.kt InboxMessage; the relay
// servers have no listing and answer 501, see client.ts refreshInbox). Newest first, with X-Total-Count.

export const SGIncomingMessageSchema = z.object({
  /** "text:<hash>": a hash of sender, date and text, like the webhook's messageId. */
  id: z.string(),
  /** SMS, DATA_SMS, MMS or MMS_DOWNLOADED. */
  type: z.string(),
  sender: z.string(),
  recipient: z.string().nullish(),
  simNumber: z.number().int().nullish(),
  /** For an SMS, its whole text (IncomingMessagesService.toPreview). */
  contentPreview: z.string(),
  /** When the SMS was received: the same instant as the webhook's receivedAt. */
  createdAt: IsoDateSchema,
  attachments: z.array(z.unknown()).nullish(),
});
export type SGIncomingMessage = z.output<typeof SGIncomingMessageSchema>;

// ------------------------------------------------------------------------------------------------
// GET /health (unauthenticated; domain/HealthResponse.kt): 200 for pass or warn, 500 (local) or
// 503 (cloud) for fail, with the same body.

export const SGHealthSchema = z.object({
  status: z.string().nullish(),
  version: z.string().nullish(),
  releaseId: z.number().nullish(),
  checks: z.record(z.string(), z.unknown()).nullish(),
});
export type SGHealth = z.output<typeof SGHealthSchema>;

// ------------------------------------------------------------------------------------------------
// Webhook deliveries (webhooks/domain/WebHookEventDTO.kt, webhooks/payload/*.kt): the phone
// posts `{id, webhookId, event, deviceId, payload}`; `id` is new on every emission.

export const SGWebhookEnvelopeSchema = z.object({
  id: z.string().nullish(),
  webhookId: z.string().nullish(),
  event: z.string().min(1),
  deviceId: z.string().nullish(),
  payload: z.record(z.string(), z.unknown()),
});

/** The fields every message event carries (MessageEventPayload.kt); phoneNumber is the deprecated name of sender/recipient. */
const base = {
  messageId: z.string().min(1),
  sender: z.string().nullish(),
  recipient: z.string().nullish(),
  simNumber: z.number().int().nullish(),
  phoneNumber: z.string().nullish(),
};

/** sms:received. `messageId` is a hash of the text, not unique; versions before `sender` have only phoneNumber. */
export const SGSmsReceivedSchema = z
  .object({ ...base, messageId: z.string().nullish(), message: z.string(), receivedAt: IsoDateSchema })
  .refine((p) => !!(p.sender || p.phoneNumber), { message: "is required", path: ["sender"] });

/** sms:sent: `partsCount` is -1 when the app did not record it. `messageId` is the ID we sent under. */
export const SGSmsSentSchema = z.object({ ...base, partsCount: z.number().int().nullish(), sentAt: IsoDateSchema });
export const SGSmsDeliveredSchema = z.object({ ...base, deliveredAt: IsoDateSchema });
export const SGSmsFailedSchema = z.object({ ...base, failedAt: IsoDateSchema, reason: z.string().nullish() });

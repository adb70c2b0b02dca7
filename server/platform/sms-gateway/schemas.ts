import { z } from "zod";

// SMS Gateway for Android's JSON (sources: docs/providers.md, "Provider schemas"). Gson leaves out
// null fields, so every field we do not rely on is optional and nullable.

const ISO_DATE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/;

export function parseIsoDate(value: string): number | null {
  if (!ISO_DATE.test(value)) return null;
  // "+0700" (no colon) is ISO 8601 too, but not every Date.parse reads it.
  const ms = Date.parse(value.replace(/([+-]\d{2})(\d{2})$/, "$1:$2"));
  return Number.isFinite(ms) ? ms : null;
}

const IsoDateSchema = z.string().transform((value, ctx) => {
  const ms = parseIsoDate(value);
  if (ms === null) {
    ctx.addIssue({ code: "custom", message: "must be an ISO 8601 date with an offset" });
    return z.NEVER;
  }
  return ms;
});

const SGRecipientSchema = z.object({
  /** The number as sent, or the first 16 characters of its SHA-256 when the message is hashed. */
  phoneNumber: z.string(),
  /** Pending, Processed, Sent, Delivered, Failed, Cancelling, Cancelled (the spec lacks the last two); others kept as given. */
  state: z.string(),
  error: z.string().nullish(),
});

export const SGMessageStateSchema = z.object({
  id: z.string().min(1),
  deviceId: z.string().nullish(),
  state: z.string(),
  isHashed: z.boolean().nullish(),
  isEncrypted: z.boolean().nullish(),
  recipients: z.array(SGRecipientSchema),
  states: z
    .record(z.string(), z.string())
    .nullish()
    .transform((v) => v ?? {}),
  textMessage: z.object({ text: z.string() }).nullish(),
  scheduleAt: z.string().nullish(),
});
export type SGMessageState = z.output<typeof SGMessageStateSchema>;

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
  source: z.string().nullish(),
});
export type SGWebhook = z.output<typeof SGWebhookSchema>;

// GET /inbox (local server only; the relay servers answer 501): newest first, with X-Total-Count.

export const SGIncomingMessageSchema = z.object({
  /** "text:<hash>": a hash of sender, date and text, like the webhook's messageId. */
  id: z.string(),
  type: z.string(),
  sender: z.string(),
  recipient: z.string().nullish(),
  simNumber: z.number().int().nullish(),
  contentPreview: z.string(),
  /** When the SMS was received: the same instant as the webhook's receivedAt. */
  createdAt: IsoDateSchema,
  attachments: z.array(z.unknown()).nullish(),
});
export type SGIncomingMessage = z.output<typeof SGIncomingMessageSchema>;

// GET /health: 200 for pass or warn, 500 (local) or 503 (cloud) for fail, with the same body.

export const SGHealthSchema = z.object({
  status: z.string().nullish(),
  version: z.string().nullish(),
  releaseId: z.number().nullish(),
  checks: z.record(z.string(), z.unknown()).nullish(),
});
export type SGHealth = z.output<typeof SGHealthSchema>;

export const SGWebhookEnvelopeSchema = z.object({
  id: z.string().nullish(),
  webhookId: z.string().nullish(),
  event: z.string().min(1),
  deviceId: z.string().nullish(),
  payload: z.record(z.string(), z.unknown()),
});

/** phoneNumber is the deprecated name of sender/recipient. */
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

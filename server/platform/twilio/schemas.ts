import { z } from "zod";

// Twilio's Messaging API (2010-04-01) JSON (sources: docs/providers.md, "Provider schemas"). Statuses
// stay strings: a value Twilio adds later must not make a whole page of messages unreadable.

export const ACCOUNT_SID = /^AC[0-9a-fA-F]{32}$/;
export const MESSAGING_SERVICE_SID = /^MG[0-9a-fA-F]{32}$/;
const MESSAGE_SID = /^(SM|MM)[0-9a-fA-F]{32}$/;

const rfc2822 = z
  .string()
  .nullish()
  .transform((v) => {
    if (!v) return null;
    const ms = Date.parse(v);
    return Number.isFinite(ms) ? ms : null;
  });

/** Twilio sends counts as strings ("1"). */
const countString = z
  .union([z.string(), z.number()])
  .nullish()
  .transform((v) => {
    if (v === null || v === undefined || v === "") return null;
    const n = Number(v);
    return Number.isInteger(n) && n >= 0 ? n : null;
  });

const text = z
  .string()
  .nullish()
  .transform((v) => v ?? null);

export const TwilioMessageSchema = z.object({
  sid: z.string().min(1),
  account_sid: text,
  messaging_service_sid: text,
  from: text,
  to: text,
  body: text,
  status: z.string().min(1),
  direction: text,
  num_segments: countString,
  num_media: countString,
  error_code: z
    .union([z.number().int(), z.string().regex(/^\d+$/).transform(Number)])
    .nullish()
    .transform((v) => v ?? null),
  error_message: text,
  date_created: rfc2822,
  date_sent: rfc2822,
  date_updated: rfc2822,
  uri: text,
});
export type TwilioMessage = z.output<typeof TwilioMessageSchema>;

const paging = {
  page: z.number().int().nullish(),
  page_size: z.number().int().nullish(),
  next_page_uri: text,
  uri: text,
};

export const TwilioMessagePageSchema = z.object({ ...paging, messages: z.array(TwilioMessageSchema) });
export type TwilioMessagePage = z.output<typeof TwilioMessagePageSchema>;

const TwilioMediaSchema = z.object({
  sid: z.string().min(1),
  parent_sid: text,
  content_type: text,
  /** …/Messages/{MessageSid}/Media/{Sid}.json; the content is the same URI without ".json". */
  uri: z.string().min(1),
});
export type TwilioMedia = z.output<typeof TwilioMediaSchema>;

export const TwilioMediaPageSchema = z.object({ ...paging, media_list: z.array(TwilioMediaSchema) });

export const TwilioErrorBodySchema = z.object({
  code: z.number().int().nullish(),
  message: z.string().nullish(),
  more_info: z.string().nullish(),
  status: z.number().int().nullish(),
});

// Webhooks (form-encoded), read from the form's first values. Twilio adds parameters without notice:
// unknown ones are dropped here, but still count for the signature.

const sid = (pattern: RegExp, what: string) => z.string().regex(pattern, `must be a ${what}`);
/** An optional field; sent empty, it is absent. */
const optional = (schema: z.ZodType<string>) => schema.optional().or(z.literal("").transform(() => undefined));

export const StatusCallbackSchema = z.object({
  MessageSid: sid(MESSAGE_SID, "message SID (SM… or MM…)"),
  MessageStatus: z.string().min(1),
  AccountSid: sid(ACCOUNT_SID, "account SID (AC…)"),
  From: z.string().min(1),
  To: z.string().min(1),
  MessagingServiceSid: optional(sid(MESSAGING_SERVICE_SID, "Messaging Service SID (MG…)")),
  ErrorCode: optional(z.string().regex(/^\d+$/, "must be a number")),
  /** YYMMDDhhmm (UTC) of the carrier's delivery report, when it sent one. */
  RawDlrDoneDate: optional(z.string()),
  NumSegments: optional(z.string().regex(/^\d+$/, "must be a number")),
});

export const InboundMessageSchema = z.object({
  MessageSid: sid(MESSAGE_SID, "message SID (SM… or MM…)"),
  AccountSid: sid(ACCOUNT_SID, "account SID (AC…)"),
  From: z.string().min(1),
  To: z.string().min(1),
  Body: z.string().default(""),
  NumMedia: z
    .string()
    .regex(/^\d+$/, "must be a number")
    .default("0")
    .transform(Number)
    .pipe(z.number().int().max(10, "must be at most 10")),
  MessagingServiceSid: optional(sid(MESSAGING_SERVICE_SID, "Messaging Service SID (MG…)")),
  /** Advanced Opt-Out (Messaging Services): STOP, START or HELP when the body was such a keyword. */
  OptOutType: optional(z.string()),
});

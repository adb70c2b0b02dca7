import type { ZodError, ZodType } from "zod";
import { ApiError } from "../../kernel/errors";
import { normalizeHandle } from "../../kernel/handles";
import { smsFromContact } from "../provider";
import type { DeliveryStatus, ProviderAttachmentRef, ProviderInbound } from "../types";
import { twilioErrorText } from "./errors";
import { InboundMessageSchema, StatusCallbackSchema, type TwilioMessage } from "./schemas";

// One URL takes both "A message comes in" and our sends' status callbacks: only a callback
// carries a MessageStatus other than "received".

export interface TwilioLineView {
  handle: string;
  accountSid: string;
  messagingServiceSid: string | null;
}

// help.twilio.com "Twilio support for opt-out keywords" (REVOKE and OPTOUT since 2025, the FCC's
// revocation rules); only the keyword alone counts, as Twilio itself decides.
const OPT_OUT_KEYWORDS = ["STOP", "STOPALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT", "REVOKE", "OPTOUT"] as const;
const OPT_IN_KEYWORDS = ["START", "YES", "UNSTOP"] as const;

export function optOutChange(body: string | null, optOutType?: string): "stop" | "start" | undefined {
  // Advanced Opt-Out (Messaging Services) names the kind itself, also for custom keywords.
  const type = optOutType?.trim().toUpperCase();
  if (type === "STOP") return "stop";
  if (type === "START") return "start";
  if (type) return undefined; // HELP
  const word = (body ?? "").trim().toUpperCase();
  if ((OPT_OUT_KEYWORDS as readonly string[]).includes(word)) return "stop";
  if ((OPT_IN_KEYWORDS as readonly string[]).includes(word)) return "start";
  return undefined;
}

export type StatusMeaning =
  | { report: DeliveryStatus; reason?: string }
  /** Still on its way at Twilio: the message is already `sent` for us. */
  | { pending: true }
  | { inbound: true };

const STATUS_MEANINGS: Record<string, StatusMeaning> = {
  queued: { pending: true },
  accepted: { pending: true },
  scheduled: { pending: true },
  sending: { pending: true },
  sent: { report: "sent" },
  delivered: { report: "delivered" },
  // WhatsApp and RCS only: read implies delivered.
  read: { report: "delivered" },
  undelivered: { report: "undelivered" },
  partially_delivered: { report: "undelivered", reason: "only part of the message reached the recipient" },
  failed: { report: "failed" },
  canceled: { report: "failed", reason: "canceled before Twilio sent it" },
  receiving: { inbound: true },
  received: { inbound: true },
};

export function statusMeaning(status: string): StatusMeaning | null {
  return Object.hasOwn(STATUS_MEANINGS, status) ? STATUS_MEANINGS[status]! : null;
}

/** RawDlrDoneDate is YYMMDDhhmm, UTC. */
export function parseRawDlrDoneDate(value: string | undefined): number | null {
  const m = value ? /^(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})$/.exec(value.trim()) : null;
  if (!m) return null;
  const [year, month, day, hour, minute] = m.slice(1).map(Number) as [number, number, number, number, number];
  const at = Date.UTC(2000 + year, month - 1, day, hour, minute);
  const d = new Date(at);
  // Reject what Date.UTC would roll over (month 13, 31 February, hour 24).
  if (d.getUTCMonth() !== month - 1 || d.getUTCDate() !== day || d.getUTCHours() !== hour || d.getUTCMinutes() !== minute) return null;
  return at;
}

const EXTENSIONS: Record<string, string> = {
  "image/jpeg": "jpg",
  "image/png": "png",
  "image/gif": "gif",
  "image/webp": "webp",
  "image/heic": "heic",
  "video/mp4": "mp4",
  "video/3gpp": "3gp",
  "audio/mpeg": "mp3",
  "audio/amr": "amr",
  "audio/ogg": "ogg",
  "text/vcard": "vcf",
  "text/x-vcard": "vcf",
  "text/plain": "txt",
  "application/pdf": "pdf",
};

/** Twilio's media have no file name: the media SID and an extension from the type. */
export function mediaFilename(url: string, mimeType: string): string {
  let last = "";
  try {
    last = new URL(url).pathname.split("/").filter(Boolean).pop() ?? "";
  } catch {
    last = "";
  }
  const name = last.replace(/\.json$/, "").replace(/[^\w.-]/g, "").slice(0, 64) || "media";
  const ext = EXTENSIONS[mimeType.toLowerCase()];
  return ext && !name.toLowerCase().endsWith(`.${ext}`) ? `${name}.${ext}` : name;
}

function fields(form: URLSearchParams): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of form) if (!Object.hasOwn(out, name)) out[name] = value;
  return out;
}

function refusal(error: ZodError, given: Record<string, string>, what: string): ApiError {
  const issue = error.issues[0]!;
  const name = String(issue.path[0] ?? "body");
  if (!Object.hasOwn(given, name)) return new ApiError("missing_required_parameter", `Twilio ${what} without ${name}.`, { param: name });
  return new ApiError("invalid_parameter_value", `Twilio ${what}: ${name} ${issue.message}.`, { param: name });
}

function parseWith<T>(schema: ZodType<T>, given: Record<string, string>, what: string): T {
  const parsed = schema.safeParse(given);
  if (!parsed.success) throw refusal(parsed.error, given, what);
  return parsed.data;
}

const sameNumber = (a: string, b: string) => normalizeHandle(a) === normalizeHandle(b);

function checkOwnership(line: TwilioLineView, hook: { AccountSid: string; MessagingServiceSid?: string }, number: { param: "To" | "From"; value: string }, what: string): void {
  if (hook.AccountSid !== line.accountSid) {
    throw new ApiError("invalid_parameter_value", `Twilio ${what} for account ${hook.AccountSid}, not this line's account.`, { param: "AccountSid" });
  }
  if (line.messagingServiceSid) {
    if (hook.MessagingServiceSid && hook.MessagingServiceSid !== line.messagingServiceSid) {
      throw new ApiError("invalid_parameter_value", `Twilio ${what} for Messaging Service ${hook.MessagingServiceSid}, not this line's.`, { param: "MessagingServiceSid" });
    }
  } else if (!sameNumber(number.value, line.handle)) {
    throw new ApiError("invalid_parameter_value", `Twilio ${what} for ${number.value}, not this line's number ${line.handle}.`, { param: number.param });
  }
}

function statusEvent(given: Record<string, string>, line: TwilioLineView, now: number): ProviderInbound {
  const what = "status callback";
  const cb = parseWith(StatusCallbackSchema, given, what);
  const meaning = statusMeaning(cb.MessageStatus);
  if (!meaning || "inbound" in meaning) {
    throw new ApiError("invalid_parameter_value", `Twilio ${what}: unknown MessageStatus '${cb.MessageStatus.slice(0, 40)}'.`, { param: "MessageStatus" });
  }
  checkOwnership(line, cb, { param: "From", value: cb.From }, what);
  if ("pending" in meaning) return { kind: "ignored", reason: `status ${cb.MessageStatus} of ${cb.MessageSid}: still on its way` };
  const status = meaning.report;
  const code = cb.ErrorCode !== undefined ? Number(cb.ErrorCode) : null;
  const failed = status === "undelivered" || status === "failed";
  const reason = failed ? [code !== null ? twilioErrorText(code) : null, meaning.reason].filter(Boolean).join("; ") || `${cb.MessageStatus} (Twilio gave no error code)` : null;
  // Callbacks carry no time of their own; a carrier's delivery report carries its own (minutes).
  const dlr = status === "delivered" || status === "undelivered" ? parseRawDlrDoneDate(cb.RawDlrDoneDate) : null;
  return { kind: "status", guid: cb.MessageSid, status, at: dlr ?? now, reason, segments: cb.NumSegments !== undefined ? Number(cb.NumSegments) || null : null };
}

function messageEvent(given: Record<string, string>, line: TwilioLineView, now: number): ProviderInbound {
  const what = "inbound message";
  const m = parseWith(InboundMessageSchema, given, what);
  checkOwnership(line, m, { param: "To", value: m.To }, what);
  const attachments: ProviderAttachmentRef[] = [];
  for (let i = 0; i < m.NumMedia; i++) {
    const url = given[`MediaUrl${i}`];
    if (!url) throw new ApiError("missing_required_parameter", `Twilio ${what} with NumMedia ${m.NumMedia} without MediaUrl${i}.`, { param: `MediaUrl${i}` });
    const mimeType = given[`MediaContentType${i}`]?.trim() || "application/octet-stream";
    attachments.push({ ref: url, filename: mediaFilename(url, mimeType), mimeType, size: null });
  }
  // The webhook carries no time: it is posted as the message arrives.
  return smsFromContact({ guid: m.MessageSid, sender: m.From, text: m.Body || null, attachments, sentAt: now, optOut: optOutChange(m.Body || null, m.OptOutType) });
}

export function mapWebhook(form: URLSearchParams, line: TwilioLineView, now = Date.now()): ProviderInbound[] {
  const given = fields(form);
  const status = given.MessageStatus;
  if (status !== undefined && status !== "received" && status !== "receiving") return [statusEvent(given, line, now)];
  return [messageEvent(given, line, now)];
}

export function mapListedMessage(m: TwilioMessage, attachments: ProviderAttachmentRef[]): ProviderInbound {
  if (m.direction !== "inbound") return { kind: "ignored", reason: `${m.direction ?? "unknown"} message ${m.sid}` };
  if (!m.from) return { kind: "ignored", reason: `message ${m.sid} without a sender` };
  const text = m.body || null;
  return smsFromContact({ guid: m.sid, sender: m.from, text, attachments, sentAt: m.date_sent ?? m.date_created ?? Date.now(), optOut: optOutChange(text) });
}

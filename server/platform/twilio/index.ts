import { z } from "zod";
import { config } from "../../kernel/config";
import { ApiError } from "../../kernel/errors";
import { isPhoneNumber } from "../../kernel/handles";
import { processSingleton } from "../../kernel/singleton";
import { publicUrlIsServers } from "../../kernel/public-url";
import { filesBaseUrl } from "../../storage/signed-urls";
import { defineProvider, type InboundRequest, type ProviderLine } from "../provider";
import { twilioAbout } from "./about";
import type { ProbeResult } from "../types";
import { createTwilioClient, type TwilioClient } from "./client";
import { describeTwilioError } from "./errors";
import { trimTrailingSlashes } from "../../kernel/strings";
import { mediaType } from "../http";
import { providerUrlSetting } from "../settings-url";
import { mapWebhook } from "./inbound";
import { inboundSince, listedEvent, twilioPlatform } from "./platform";
import { ACCOUNT_SID, MESSAGING_SERVICE_SID, type TwilioMessage } from "./schemas";
import { formParams, validTwilioJsonSignature, validTwilioSignature } from "./signature";

export { TWILIO_ERROR_CODES,  } from "./errors";

const TWILIO_API_URL = "https://api.twilio.com";
const DEFAULT_SEND_TIMEOUT_SECONDS = 15;
export const EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response/>';

/** "" from the dashboard is absent, so a bad value gets its own message, not a union's. */
const optional = <T extends z.ZodType<string | undefined>>(schema: T) => z.preprocess((v) => (v === "" ? undefined : v), schema.optional());

const BaseUrl = providerUrlSetting("must be a URL, e.g. https://api.twilio.com")
  .refine((u) => {
    const url = new URL(u);
    return !url.search && trimTrailingSlashes(url.pathname) === "";
  }, "must be an origin only (https://api.twilio.com or a regional edge such as https://api.dublin.ie1.twilio.com), without a path, query or credentials")
  .transform((u) => new URL(u).origin);

const Config = z
  .object({
    accountSid: z.string().trim().regex(ACCOUNT_SID, "must be the account's SID: AC followed by 32 hexadecimal digits"),
    authToken: z.string().trim().min(1, "is required (the account's Auth Token)").max(200),
    messagingServiceSid: optional(z.string().trim().regex(MESSAGING_SERVICE_SID, "must be a Messaging Service SID: MG followed by 32 hexadecimal digits")),
    baseUrl: optional(BaseUrl),
    sendTimeoutSeconds: z.number().int().min(2).max(120).default(DEFAULT_SEND_TIMEOUT_SECONDS),
  })
  .strict();

const Settings = z.object({
  accountSid: z.string(),
  messagingServiceSid: z.string().nullable().default(null),
  baseUrl: z.string().default(TWILIO_API_URL),
  sendTimeoutSeconds: z.number().int().default(DEFAULT_SEND_TIMEOUT_SECONDS),
});
const Secrets = z.object({ authToken: z.string() });
type Settings = z.output<typeof Settings>;
type Secrets = z.output<typeof Secrets>;
type TwilioLine = ProviderLine<Settings, Secrets>;

function clientFor(line: TwilioLine, timeoutMs?: number): TwilioClient {
  return createTwilioClient(
    { accountSid: line.settings.accountSid, authToken: line.secrets.authToken, baseUrl: line.settings.baseUrl },
    timeoutMs ? { timeoutMs } : {},
  );
}

const lineView = (line: TwilioLine) => ({ handle: line.handle, accountSid: line.settings.accountSid, messagingServiceSid: line.settings.messagingServiceSid });

/** As Twilio signed it: PUBLIC_URL plus the path from /api/inbound/ on, so the check survives a reverse proxy rewriting host, scheme or prefix. */
function calledUrl(url: URL): string {
  const at = url.pathname.indexOf("/api/inbound/");
  return `${trimTrailingSlashes(config().PUBLIC_URL)}${at >= 0 ? url.pathname.slice(at) : url.pathname}${url.search}`;
}

/** Twilio's webhook forms are a few KiB with a few dozen fields (ten media at most): larger ones are refused before any signature work. */
const MAX_WEBHOOK_BYTES = 64 * 1024;
const MAX_WEBHOOK_PARAMS = 256;

function boundWebhook(body: Uint8Array): void {
  if (body.byteLength > MAX_WEBHOOK_BYTES) throw new ApiError("request_too_large", `A Twilio webhook body is at most ${MAX_WEBHOOK_BYTES} bytes; this one has ${body.byteLength}.`);
  let params = body.byteLength > 0 ? 1 : 0;
  for (let i = 0; i < body.byteLength; i++) if (body[i] === 0x26) params++; // '&'
  if (params > MAX_WEBHOOK_PARAMS) throw new ApiError("request_too_large", `A Twilio webhook form has at most ${MAX_WEBHOOK_PARAMS} parameters; this one has ${params}.`);
}

function verify(request: InboundRequest, line: TwilioLine) {
  boundWebhook(request.body);
  const signature = request.headers.get("x-twilio-signature");
  if (!signature) return { code: "invalid_signature" as const, message: "Missing X-Twilio-Signature: Twilio signs every webhook it sends." };
  const url = calledUrl(request.url);
  const valid = new URL(url).searchParams.has("bodySHA256")
    ? validTwilioJsonSignature(line.secrets.authToken, signature, url, request.body)
    : validTwilioSignature(
        line.secrets.authToken,
        signature,
        url,
        mediaType(request.headers) === "application/x-www-form-urlencoded" ? formParams(new TextDecoder().decode(request.body)) : new Map(),
      );
  if (valid) return null;
  return {
    code: "invalid_signature" as const,
    message: "X-Twilio-Signature does not match this line's Auth Token and URL (PUBLIC_URL with the request's path and query).",
  };
}

/** Catch-up lists everything since its cursor once, then hands it out a page at a time. */
const catchUpLists = processSingleton("twilio-catch-up", () => new Map<string, { after: number; at: number; messages: TwilioMessage[] }>());
const CATCH_UP_LIST_TTL_MS = 10 * 60_000;

export const twilioProvider = defineProvider<z.output<typeof Config>, Settings, Secrets>({
  name: twilioAbout.name,
  label: twilioAbout.label,
  configSchema: Config,
  split: (c) => ({
    settings: { accountSid: c.accountSid, messagingServiceSid: c.messagingServiceSid ?? null, baseUrl: c.baseUrl ?? TWILIO_API_URL, sendTimeoutSeconds: c.sendTimeoutSeconds },
    secrets: { authToken: c.authToken },
  }),
  load: (settings, secrets) => ({ settings: Settings.parse(settings), secrets: Secrets.safeParse(secrets).data ?? { authToken: "" } }),
  // The Account SID is an identifier (it is in every API URL), not a secret; the Auth Token is never shown.
  destination: (s) => s.baseUrl,
  describe: (s) => ({ accountSid: s.accountSid, messagingServiceSid: s.messagingServiceSid, baseUrl: s.baseUrl, sendTimeoutSeconds: s.sendTimeoutSeconds }),
  sendTimeoutMs: (s) => s.sendTimeoutSeconds * 1000,
  service: "sms",
  deliveryReports: true,
  idempotentSends: false,
  monitored: twilioAbout.monitored,

  platform: (line) =>
    twilioPlatform(clientFor(line), {
      handle: line.handle,
      messagingServiceSid: line.settings.messagingServiceSid,
      statusCallback: line.inboundUrl,
      sendTimeoutMs: line.settings.sendTimeoutSeconds * 1000,
    }),

  async probe(line): Promise<ProbeResult> {
    const fail = (reason: string): ProbeResult => ({ ok: false, reason, capabilities: {}, advancedFeatures: false });
    if (!line.settings.messagingServiceSid && !isPhoneNumber(line.handle)) {
      return fail(`the line's handle ${line.handle} must be its Twilio number in E.164 form (+15017122661), or the line must send through a Messaging Service`);
    }
    try {
      // The cheapest call that proves the credentials: one message of the account's list.
      await clientFor(line, 15_000).listMessages({ pageSize: 1 });
    } catch (err) {
      return fail(describeTwilioError(err));
    }
    return {
      ok: true,
      reason: null,
      capabilities: {
        account_sid: line.settings.accountSid,
        sender: line.settings.messagingServiceSid ?? line.handle,
        messaging_service: line.settings.messagingServiceSid !== null,
        attachments: true,
        delivery_reports: true,
        reactions: false,
        typing: false,
        read_receipts: false,
        replies: false,
        voice_memos: false,
      },
      advancedFeatures: false,
    };
  },

  warnings() {
    const out: string[] = [];
    const publicUrl = new URL(config().PUBLIC_URL);
    // Only about the server's own address: the operator CLI may just be guessing it.
    const known = publicUrlIsServers();
    if (known && publicUrl.protocol !== "https:") {
      out.push(
        `PUBLIC_URL is ${publicUrl.origin}, not https: Twilio should post inbound messages and delivery reports to an https URL with a publicly trusted certificate (it refuses self-signed ones).`,
      );
    }
    const files = new URL(filesBaseUrl());
    if ((known || config().FILES_PUBLIC_URL) && files.protocol !== "https:") {
      out.push(`Attachments are sent as MMS through links under ${files.origin}, which Twilio must be able to fetch: serve it over https from a public address.`);
    }
    return out;
  },

  async registerWebhooks(line) {
    // The number's webhook is the operator's one Console step (this service does not drive IncomingPhoneNumbers);
    // status callbacks need nothing: every send names the line's URL as its StatusCallback.
    const where = line.settings.messagingServiceSid
      ? `Messaging Service ${line.settings.messagingServiceSid} (Integration, "Send a webhook")`
      : `phone number ${line.handle} (Messaging Configuration)`;
    return [`In the Twilio Console, set "A message comes in" of ${where} to ${line.inboundUrl} with HTTP POST: Twilio's number settings are not changed by this service, and inbound messages arrive only through catch-up until it is set.`];
  },

  inbound: {
    auth: "signature",
    format: "form",
    verify,
    parse(body, line) {
      if (!(body instanceof URLSearchParams)) throw new ApiError("unsupported_media_type", "Twilio posts its webhooks as application/x-www-form-urlencoded.");
      return mapWebhook(body, lineView(line));
    },
    reply: { contentType: "text/xml", body: EMPTY_TWIML },
  },

  async catchUp(line, after, page) {
    const client = clientFor(line);
    let list = catchUpLists.get(line.id);
    // A run starts at offset 0 and reads the listing afresh; later pages of the run reuse it.
    if (page.offset === 0 || !list || list.after !== after || Date.now() - list.at > CATCH_UP_LIST_TTL_MS) {
      list = { after, at: Date.now(), messages: await inboundSince(client, lineView(line), after) };
      catchUpLists.set(line.id, list);
    }
    const slice = list.messages.slice(page.offset, page.offset + page.limit);
    if (page.offset + page.limit >= list.messages.length) catchUpLists.delete(line.id);
    const events = [];
    // One at a time: an MMS costs a Media list call each, within Twilio's rate limits.
    for (const m of slice) events.push(await listedEvent(client, m));
    return events;
  },

  async downloadAttachment(line, ref, { maxBytes, sink }) {
    return clientFor(line).downloadMedia(ref.ref, { maxBytes, sink });
  },
});

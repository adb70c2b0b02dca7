import { normalizeHandle } from "../../kernel/handles";
import { fileUrlSigner } from "../../storage/signed-urls";
import { sameContent } from "../matching";
import type { DeliveryReport, OutgoingMessage, Platform, ProviderInbound, ReconcileResult, SendResult } from "../types";
import type { ListMessagesQuery, TwilioClient } from "./client";
import { describeTwilioError, sendFailure, twilioErrorText } from "./errors";
import { mapListedMessage, mediaFilename, statusMeaning } from "./inbound";
import type { TwilioMessage, TwilioMessagePage } from "./schemas";

// A create answers 201 at once (the carrier's verdict comes later, in status callbacks). Twilio has
// no idempotency key: a create whose outcome is unknown is reconciled before anything is sent again.

export interface TwilioPlatformLine {
  /** E.164, unless a Messaging Service sends. */
  handle: string;
  messagingServiceSid: string | null;
  statusCallback: string;
  sendTimeoutMs: number;
}

/** As long as Twilio may keep a message queued (ValidityPeriod, 36000 s by default): it fetches the media then. */
const MEDIA_URL_TTL_SECONDS = 36_000;

const MAX_PAGES = 20;

const TRIAL_PREFIX = "Sent from your Twilio trial account - ";

const sameNumber = (a: string | null, b: string) => a !== null && normalizeHandle(a) === normalizeHandle(b);

/** Smart Encoding (on for many Messaging Services) stores GSM-7 look-alikes of typographic characters: compare both sides as it would write them. */
const SMART_ENCODING: [RegExp, string][] = [
  [/[\u2018\u2019\u201A\u201B\u2032\u00B4]/g, "'"],
  [/[\u201C\u201D\u201E\u201F\u2033\u00AB\u00BB]/g, '"'],
  [/[\u2010-\u2015\u2212]/g, "-"],
  [/\u2026/g, "..."],
  [/[\u00A0\u2000-\u200A\u202F\u205F\u3000]/g, " "],
  [/[\u200B\u2060\uFEFF]/g, ""],
];
const smartEncoded = (text: string) => SMART_ENCODING.reduce((t, [from, to]) => t.replace(from, to), text);

/** White space and Smart Encoding aside; a trial account's prefix allowed. */
export function sameBody(ours: string | null, theirs: string | null): boolean {
  const body = smartEncoded(theirs ?? "");
  const stripped = body.startsWith(TRIAL_PREFIX) ? body.slice(TRIAL_PREFIX.length) : body;
  const want = ours === null ? null : smartEncoded(ours);
  return [body, stripped].some((t) => sameContent({ text: want, attachmentNames: [] }, { text: t || null, attachmentNames: [] }));
}

// A Messaging Service picks the number itself, so then by recipient only. Twilio gives a queued message no date_sent,
// and DateSent filters skip those: the newest page without a date filter covers a create still queued.
export function reconcileQueries(
  m: Pick<OutgoingMessage, "to">,
  since: number,
  line: Pick<TwilioPlatformLine, "handle" | "messagingServiceSid">,
): { query: ListMessagesQuery; maxPages: number }[] {
  const who = { to: m.to, ...(line.messagingServiceSid ? {} : { from: line.handle }) };
  return [
    { query: { ...who, sentSince: since, pageSize: 1000 }, maxPages: MAX_PAGES },
    { query: { ...who, pageSize: 100 }, maxPages: 1 },
  ];
}

/** A Messaging Service's: all, filtered after. */
export function catchUpQuery(line: Pick<TwilioPlatformLine, "handle" | "messagingServiceSid">, after: number): ListMessagesQuery {
  return { ...(line.messagingServiceSid ? {} : { to: line.handle }), sentSince: after, pageSize: 1000 };
}

async function listAll(client: TwilioClient, query: ListMessagesQuery, maxPages = MAX_PAGES): Promise<TwilioMessage[]> {
  const out: TwilioMessage[] = [];
  let page: TwilioMessagePage = await client.listMessages(query);
  for (let n = 1; ; n++) {
    out.push(...page.messages);
    if (!page.next_page_uri || page.messages.length === 0 || n >= maxPages) return out;
    page = await client.nextMessagePage(page.next_page_uri);
  }
}

/** Rare: a message refused at once. */
function deliveryOf(m: TwilioMessage): DeliveryReport | undefined {
  const meaning = statusMeaning(m.status);
  if (!meaning || !("report" in meaning) || meaning.report === "sent") return undefined;
  const reason = meaning.report === "delivered" ? null : m.error_code !== null ? twilioErrorText(m.error_code, m.error_message) : (meaning.reason ?? `${m.status} (Twilio gave no error code)`);
  return { status: meaning.report, at: m.date_updated ?? Date.now(), reason };
}

function sent(m: TwilioMessage): SendResult {
  const delivery = deliveryOf(m);
  return {
    ok: true,
    guid: m.sid,
    sentAt: m.date_created ?? Date.now(),
    service: "sms",
    ...(m.num_segments ? { segments: m.num_segments } : {}),
    ...(delivery ? { delivery } : {}),
  };
}

const refuse = (reason: string): SendResult => ({ ok: false, permanent: true, reason });

export function twilioPlatform(client: TwilioClient, line: TwilioPlatformLine): Platform {
  const sender = line.messagingServiceSid ? { messagingServiceSid: line.messagingServiceSid } : { from: line.handle };

  return {
    name: "twilio",

    async sendMessage(m: OutgoingMessage): Promise<SendResult> {
      if (m.isGroup) return refuse("Twilio SMS has no group chats: send to each member's number instead");
      if (!m.text && m.attachments.length === 0) return refuse("nothing to send");
      if (m.attachments.length > 10) return refuse("Twilio sends at most 10 attachments in one MMS");
      // MMS: Twilio fetches each file from our signed, expiring link (which must be public).
      const link = m.attachments.length ? await fileUrlSigner(MEDIA_URL_TTL_SECONDS) : null;
      try {
        const created = await client.createMessage(
          {
            to: m.to,
            ...sender,
            ...(m.text ? { body: m.text } : {}),
            mediaUrls: link ? m.attachments.map((a) => link(a.fileId)) : [],
            ...(line.statusCallback ? { statusCallback: line.statusCallback } : {}),
          },
          line.sendTimeoutMs,
        );
        return sent(created);
      } catch (err) {
        return sendFailure(err);
      }
    },

    async reconcile(m, since, knownGuids): Promise<ReconcileResult> {
      const seen = new Map<string, TwilioMessage>();
      try {
        for (const { query, maxPages } of reconcileQueries(m, since, line)) for (const x of await listAll(client, query, maxPages)) seen.set(x.sid, x);
      } catch (err) {
        return { found: null, reason: `could not ask Twilio whether it sent the message: ${describeTwilioError(err)}`, unreachable: true };
      }
      const ours = [...seen.values()]
        .filter(
          (x) =>
            x.direction === "outbound-api" &&
            !knownGuids.has(x.sid) &&
            (x.date_created ?? x.date_sent ?? 0) >= since &&
            sameNumber(x.to, m.to) &&
            (line.messagingServiceSid ? x.messaging_service_sid === line.messagingServiceSid : sameNumber(x.from, line.handle)) &&
            sameBody(m.text, x.body) &&
            // A text-only send never has media; an MMS may not show its count while still queued.
            (m.attachments.length > 0 || !x.num_media),
        )
        .sort((a, b) => (a.date_created ?? 0) - (b.date_created ?? 0) || a.sid.localeCompare(b.sid));
      const first = ours[0];
      if (!first) return { found: false };
      return { found: true, guid: first.sid, sentAt: first.date_created ?? first.date_sent ?? since, service: "sms" };
    },

    sendReaction: async () => refuse("Twilio SMS has no reactions"),
    sendTyping: async () => refuse("Twilio SMS has no typing indicators"),
    sendReceipt: async () => refuse("Twilio SMS has no read receipts"),
  };
}

export async function inboundSince(client: TwilioClient, line: Pick<TwilioPlatformLine, "handle" | "messagingServiceSid">, after: number): Promise<TwilioMessage[]> {
  const listed = await listAll(client, catchUpQuery(line, after));
  return listed
    .filter(
      (x) =>
        x.direction === "inbound" &&
        (x.date_sent ?? x.date_created ?? 0) >= after &&
        (line.messagingServiceSid ? x.messaging_service_sid === line.messagingServiceSid : sameNumber(x.to, line.handle)),
    )
    .sort((a, b) => (a.date_sent ?? a.date_created ?? 0) - (b.date_sent ?? b.date_created ?? 0) || a.sid.localeCompare(b.sid));
}

export async function listedEvent(client: TwilioClient, m: TwilioMessage): Promise<ProviderInbound> {
  const media = m.num_media ? await client.listMedia(m.sid) : [];
  const attachments = media.map((x) => {
    const ref = client.mediaContentUrl(x);
    const mimeType = x.content_type || "application/octet-stream";
    return { ref, filename: mediaFilename(ref, mimeType), mimeType, size: null };
  });
  return mapListedMessage(m, attachments);
}

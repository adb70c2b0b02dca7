import { storableDeep } from "../../db/storable";
import { getDb, sql } from "../../db";
import { writeMessages } from "../../messages/store";
import { unitOfWork } from "../../write/unit";
import { adoptSent, inFlightMessages } from "../../outbox/record";
import { ApiError } from "../../kernel/errors";
import type { Chat, Line } from "../../generated/prisma/client";
import { normalizeHandle } from "../../kernel/handles";
import { type InboundRequest, type ProviderLine } from "../../platform/provider";
import { inboundTokenMatches, providerLine } from "../../platform/connection";
import { sameContent } from "../../platform/matching";
import { findProvider } from "../../platform/registry";
import type { ProviderAttachmentRef, ProviderInbound } from "../../platform/types";
import { discardBlob, storeBlob } from "../../storage/blobs";
import { fileUrlSigner } from "../../storage/signed-urls";
import { withDownloadSlot } from "../../platform/download-slots";
import { config } from "../../kernel/config";
import { log } from "../../kernel/log";
import { directChat, ingestMessage, ingestReaction, ingestReceipt, ingestTyping } from "./inbound";
import { ingestQuick, isQuick } from "./inbound-batch";
import { receiveDeliveryReport } from "../../messages/delivery-status";
import { noteProviderUp } from "../lines/line-health";
import { findLine } from "../lines/lines";
import { checkMediaQuota, StorageQuotaReached, withQuotaNote } from "./media-quota";

// Provider webhooks (POST /api/inbound/<line_id>) and catch-up both end here: each provider
// event is mapped by the line's provider, deduplicated by the provider's own ID per line (a
// unique constraint: Message(lineId, guid) for messages, ProviderEvent for the rest), and taken
// in through the same ingest functions as every other inbound event. Our own sends echoed back
// are matched to their outbox items, never stored as new messages.

export type InboundOutcome = "stored" | "duplicate" | "adopted" | "ignored";

/** Claims a provider event key for this line; false when it was taken in before. */
async function firstTime(lineId: string, key: string): Promise<boolean> {
  const rows = await sql(`INSERT INTO "ProviderEvent" ("lineId", key) VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING 1`, [lineId, key]);
  return rows.length > 0;
}

async function knownGuid(lineId: string, guid: string): Promise<boolean> {
  const rows = await sql(`SELECT 1 FROM "Message" WHERE "lineId" = $1 AND guid = $2`, [lineId, guid]);
  return rows.length > 0;
}

/** Moves the line's catch-up cursor forward to `at` (provider clock). */
async function advanceCursor(lineId: string, at: number): Promise<void> {
  await sql(`UPDATE "Line" SET "catchupAfter" = $2 WHERE id = $1 AND ("catchupAfter" IS NULL OR "catchupAfter" < $2)`, [lineId, new Date(at)]);
}

async function download(line: Line, pl: ProviderLine, ref: ProviderAttachmentRef) {
  const provider = findProvider(line.provider);
  if (!provider?.downloadAttachment) return null;
  const maxBytes = config().PROVIDER_MAX_ATTACHMENT_BYTES;
  await checkMediaQuota(line);
  // Streamed into storage as it arrives (never held whole), within the download limits.
  const { content: stored, mimeType } = await withDownloadSlot({ accountId: line.accountId ?? "", lineId: line.id }, () =>
    provider.downloadAttachment!(pl, ref, { maxBytes, sink: (chunks) => storeBlob(chunks) }),
  );
  const type = mimeType && /^[\w.+-]+\/[\w.+-]+$/.test(mimeType) ? mimeType : ref.mimeType;
  return { filename: ref.filename.slice(0, 255) || "attachment", mimeType: type, content: new Uint8Array(0), stored };
}

type MessageEvent = Extract<ProviderInbound, { kind: "message" }>;

/** Our own send, echoed back: adopt it into its outbox item (by tempGuid, else by content in flight). */
async function adoptOwn(line: Line, event: MessageEvent): Promise<boolean> {
  const sent = { guid: event.guid, sentAt: event.sentAt, service: event.service ?? undefined, providerChatId: event.providerChatId ?? undefined };
  const theirs = { text: event.text, attachmentNames: event.attachments.map((a) => a.filename) };
  // A later part of a message sent in parts (tempGuid "obx_….text"): ours, recorded by its item's own send.
  if (event.tempGuid?.startsWith("obx_") && event.tempGuid.includes(".")) return true;
  const inFlight = await inFlightMessages(line.id);
  for (const item of inFlight) {
    // Adopted only when the echo carries the whole item: its first part alone is not the message sent.
    const whole = sameContent({ text: item.payload.text, attachmentNames: item.fileNames }, theirs);
    if (item.id === event.tempGuid) return whole ? await adoptSent(item.id, sent) || true : true;
  }
  for (const item of inFlight) {
    // One part of a message sent in parts (its text, or one attachment): ours, not a new message.
    const parts = [...(item.payload.text ? [{ text: item.payload.text, attachmentNames: [] }] : []), ...item.fileNames.map((n) => ({ text: null, attachmentNames: [n] }))];
    const isPart = parts.length > 1 && parts.some((p) => sameContent(p, theirs));
    if (isPart && (item.payload.to === (event.group?.id ?? normalizeHandle(event.sender)) || (event.providerChatId !== null && (await chatHasProviderId(item.payload.chat_id, event.providerChatId))))) return true;
    const sameChat = item.payload.to === (event.group?.id ?? normalizeHandle(event.sender)) || (event.providerChatId !== null && (await chatHasProviderId(item.payload.chat_id, event.providerChatId)));
    if (sameChat && sameContent({ text: item.payload.text, attachmentNames: item.fileNames }, theirs) && (await adoptSent(item.id, sent))) return true;
  }
  return false;
}

async function chatHasProviderId(chatId: string, providerChatId: string): Promise<boolean> {
  const rows = await sql(`SELECT 1 FROM "Chat" WHERE id = $1 AND "providerChatId" = $2`, [chatId, providerChatId]);
  return rows.length > 0;
}

/** A message the line's owner sent from the device itself (typed on the Mac or phone): an outgoing message of its chat. */
async function storeOwn(line: Line, event: MessageEvent): Promise<InboundOutcome> {
  const db = await getDb();
  const accountId = line.accountId!;
  const url = await fileUrlSigner();
  let chat: Chat | null;
  if (event.group) {
    chat = await db.chat.findUnique({ where: { lineId_accountId_identifier: { lineId: line.id, accountId, identifier: event.group.id } } });
  } else {
    chat = await db.$transaction((tx) => directChat(tx, line, accountId, normalizeHandle(event.sender), event.providerChatId ?? undefined));
  }
  if (!chat) return "ignored"; // a group we have never heard from: nothing to attach it to
  const [written] = await unitOfWork((unit) =>
    writeMessages(
      unit,
      [
        {
          accountId,
          lineId: line.id,
          lineHandle: line.handle,
          chatId: chat.id,
          guid: event.guid,
          sender: line.handle,
          text: event.text || null,
          isFromMe: true,
          isAudioMessage: null,
          service: event.service ?? (line.service === "sms" ? "sms" : "imessage"),
          replyToGuid: event.replyToGuid,
          sentAt: new Date(event.sentAt),
        },
      ],
      url,
    ),
  );
  return written ? "stored" : "duplicate"; // stored before, or concurrently
}

/** A contact's STOP (or START) to this line: sends to them fail at once until they opt back in. */
async function recordOptOut(lineId: string, sender: string, change: "stop" | "start", at: number): Promise<void> {
  const handle = normalizeHandle(sender);
  if (change === "start") {
    // Only a START newer than the STOP it answers (webhooks arrive in any order).
    await sql(`DELETE FROM "OptOut" WHERE "lineId" = $1 AND handle = $2 AND "optedOutAt" <= $3`, [lineId, handle, new Date(at)]);
  } else {
    await sql(
      `INSERT INTO "OptOut" ("lineId", handle, "optedOutAt") VALUES ($1, $2, $3)
       ON CONFLICT ("lineId", handle) DO UPDATE SET "optedOutAt" = GREATEST("OptOut"."optedOutAt", EXCLUDED."optedOutAt")`,
      [lineId, handle, new Date(at)],
    );
  }
}

/** Takes in one mapped provider event. Events that cannot be placed are logged, never thrown. */
export async function ingestProviderEvent(line: Line, pl: ProviderLine, mapped: ProviderInbound): Promise<InboundOutcome> {
  // NUL characters and lone surrogates, which neither database stores, become U+FFFD.
  let event = storableDeep(mapped);
  try {
    switch (event.kind) {
      case "message": {
        if (event.optOut && !event.isFromMe) await recordOptOut(line.id, event.sender, event.optOut, event.sentAt);
        if (isQuick(event)) return await ingestQuick({ line, event });
        if (await knownGuid(line.id, event.guid)) return "duplicate";
        if (event.isFromMe) {
          if (await adoptOwn(line, event)) return "adopted";
          const outcome = await storeOwn(line, event);
          await advanceCursor(line.id, event.sentAt);
          return outcome;
        }
        // Only the first attachment travels with the message (the contract's one per message); the
        // rest are named in the log.
        const [first, ...rest] = event.attachments;
        if (rest.length) log().warn({ line_id: line.id, guid: event.guid, dropped: rest.length }, "inbound message: attachments after the first not taken in");
        let attachment: Awaited<ReturnType<typeof download>> = null;
        if (first) {
          try {
            attachment = await download(line, pl, first);
          } catch (err) {
            // Our own storage is down: refuse the event (503) rather than keep it without its
            // file; the provider's retry or the next catch-up brings it again.
            if (err instanceof ApiError && err.code === "storage_unavailable") throw err;
            // Too large, gone from the Mac, or the Mac stopped answering: the message itself is
            // still taken in (its text, or a note naming the file), never dropped.
            log().warn({ line_id: line.id, guid: event.guid, err: (err as Error).message }, "inbound message: attachment not downloaded");
            // Past the storage quota the owner must act: the note names the file even beside text.
            if (err instanceof StorageQuotaReached) event = { ...event, text: withQuotaNote(event.text ?? "", first) };
            else if (!event.text) event = { ...event, text: `[attachment ${first.filename} could not be downloaded]` };
          }
        }
        if (!event.text && !attachment) return "ignored";
        let created = false;
        try {
          ({ created } = await ingestMessage(
            line,
            {
              sender: event.sender,
              guid: event.guid,
              text: event.text,
              ...(attachment ? { attachment: { filename: attachment.filename, mimeType: attachment.mimeType, content: attachment.content } } : {}),
              isAudioMessage: event.isAudioMessage && !!attachment?.mimeType.startsWith("audio/"),
              group: event.group ? { id: event.group.id, participants: event.group.participants, name: event.group.name } : undefined,
              replyToGuid: event.replyToGuid,
              ...(event.service ? { service: event.service } : {}),
              sentAt: event.sentAt,
              ...(event.providerChatId ? { providerChatId: event.providerChatId } : {}),
            },
            attachment?.stored,
          ));
        } finally {
          // A repeat (stored before, or concurrently) or a failure: no File row points at the bytes.
          if (attachment && !created) await discardBlob(attachment.stored).catch(() => {});
        }
        await advanceCursor(line.id, event.sentAt);
        return created ? "stored" : "duplicate";
      }
      case "reaction": {
        if (event.isFromMe) return "ignored"; // ours are recorded when sent
        if (!(await firstTime(line.id, `reaction:${event.guid}`))) return "duplicate";
        await ingestReaction(line, { sender: event.sender, target: event.targetGuid, reaction: event.reaction, added: event.added, sentAt: event.sentAt });
        await advanceCursor(line.id, event.sentAt);
        return "stored";
      }
      case "typing":
        await ingestTyping(line, { sender: event.sender, isTyping: event.isTyping });
        return "stored";
      case "read": {
        if (!event.sender) return "ignored";
        if (!(await firstTime(line.id, `read:${event.guid}:${event.readAt}`))) return "duplicate";
        await ingestReceipt(line, { sender: event.sender, sentAt: event.readAt });
        return "stored";
      }
      case "status":
        return await receiveDeliveryReport(line.id, event.guid, { status: event.status, at: event.at, reason: event.reason }, event.segments);
      case "send-error":
        log().warn({ line_id: line.id, guid: event.guid, reason: event.reason }, "the provider reports a message failed after sending");
        return "ignored";
      case "ignored":
        return "ignored";
    }
  } catch (err) {
    // A refusal of the event itself is final; a failure of ours (5xx) is answered as such.
    if (err instanceof ApiError && err.status < 500) {
      log().warn({ line_id: line.id, kind: event.kind, code: err.code, reason: err.message }, "inbound event not taken in");
      return "ignored";
    }
    throw err;
  }
}

export interface WebhookReceipt {
  counts: Record<InboundOutcome, number>;
  /** The provider's own answer body, when it expects one (Twilio: TwiML). */
  reply?: { contentType: string; body: string };
}

/** The body as its provider encodes it: parsed JSON, or a form's fields. Throws ApiError for a body that is neither. */
function decodeBody(format: "json" | "form", request: InboundRequest, label: string): unknown {
  const text = new TextDecoder().decode(request.body);
  if (format === "form") {
    const type = request.headers.get("content-type")?.split(";")[0]?.trim().toLowerCase();
    if (type !== "application/x-www-form-urlencoded") {
      throw new ApiError("unsupported_media_type", `${label} posts its webhooks as application/x-www-form-urlencoded, not ${type || "a body without a Content-Type"}.`);
    }
    return new URLSearchParams(text);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new ApiError("invalid_json", `Not a ${label} webhook body: ${(err as Error).message.slice(0, 200)}`);
  }
}

/** A provider's webhook for line `lineId`: verified, mapped, taken in. Refusals are thrown as ApiError. */
export async function receiveProviderWebhook(lineId: string, request: InboundRequest): Promise<WebhookReceipt> {
  const unauthorized = new ApiError("invalid_inbound_token", "Missing or wrong token for this line's inbound URL.");
  const line = lineId.startsWith("ln_") ? await findLine(lineId) : null;
  const provider = line ? findProvider(line.provider) : null;
  if (!line || !provider?.inbound || line.isSandbox) throw unauthorized;
  const inbound = provider.inbound;
  // Every provider's URL carries the line's token (docs/providers.md, "Inbound"), signed providers' too: a
  // request signed correctly but sent without it, or with another line's, is refused.
  if (!inboundTokenMatches(line, request.url.searchParams.get("token"))) throw unauthorized;
  const pl = providerLine(line);
  if (inbound.auth === "signature") {
    const refusal = inbound.verify ? inbound.verify(request, pl) : { code: "invalid_signature" as const, message: "This provider's webhooks cannot be verified." };
    if (refusal) throw new ApiError(refusal.code, refusal.message);
  }
  const body = decodeBody(inbound.format ?? "json", request, provider.label);
  let events: ProviderInbound[];
  try {
    events = inbound.parse(body, pl);
  } catch (err) {
    if (err instanceof ApiError) throw err;
    throw new ApiError("invalid_json", `Not a ${provider.label} webhook body: ${(err as Error).message.slice(0, 200)}`);
  }
  await noteProviderUp(line.id, "webhook");
  const counts: Record<InboundOutcome, number> = { stored: 0, duplicate: 0, adopted: 0, ignored: 0 };
  for (const event of events) counts[await ingestProviderEvent(line, pl, event)]++;
  return { counts, ...(inbound.reply ? { reply: inbound.reply } : {}) };
}

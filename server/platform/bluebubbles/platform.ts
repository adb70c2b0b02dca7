import { storage } from "../../storage";
import { sameContent } from "../matching";
import type {
  OutgoingAction,
  OutgoingMessage,
  OutgoingReaction,
  OutgoingTyping,
  Platform,
  ReconcileResult,
  SendResult,
  SentPart,
  ServiceName,
} from "../types";
import { type BBMessage, type BBReaction, type BlueBubblesClient, BlueBubblesError, describeBlueBubblesError } from "./client";
import { chatAddress } from "./inbound";

// Sends are synchronous and slow (up to 60 s on the Private API, 2 min on AppleScript): each call gets the line's
// sendTimeoutSeconds, and an answer that proves nothing is "unknown". tempGuid carries the outbox ID, but BlueBubbles
// forgets it once a send ends, so it is no idempotency key. Text with an attachment is two sends (tempGuid = the ID,
// then ID + ".text"), the item's GUID the first's; reconcile looks for each part, so a retry sends only what is missing.

export interface BlueBubblesLine {
  handle: string;
  service: "imessage" | "sms" | "auto";
  privateApi: boolean;
  sendTimeoutMs: number;
}

const PRIVATE_API_TEXT = "Private API";

type Part = { kind: "attachment"; index: number } | { kind: "text"; text: string };

function partsOf(m: OutgoingMessage): Part[] {
  const parts: Part[] = m.attachments.map((_, index) => ({ kind: "attachment", index }));
  if (m.text) parts.push({ kind: "text", text: m.text });
  return parts;
}

const tempGuidOf = (m: OutgoingMessage, i: number, part: Part) => (i === 0 ? m.idempotencyKey : `${m.idempotencyKey}.${part.kind === "text" ? "text" : `a${i}`}`);

async function readFile(storageKey: string): Promise<Uint8Array> {
  const blob = await storage().open(storageKey);
  if (!blob) throw new Error(`file ${storageKey} is missing from storage`);
  const chunks: Buffer[] = [];
  for await (const chunk of blob.stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array));
  return new Uint8Array(Buffer.concat(chunks));
}

const MAX_DETAIL = 4096;

export function classify(err: unknown, isMessage: boolean): Extract<SendResult, { ok: false }> & { notRegistered?: boolean } {
  if (!(err instanceof BlueBubblesError)) {
    return { ok: false, permanent: false, unknown: isMessage, reason: `BlueBubbles send failed: ${(err as Error).message}` };
  }
  const reason = describeBlueBubblesError(err);
  // Retrying a reaction, typing indicator or receipt does no harm: only messages are "unknown".
  const unknown = (why: string) => ({ ok: false as const, permanent: false, unknown: isMessage, unreachable: true, reason: why });
  switch (err.kind) {
    case "timeout":
      return unknown(reason);
    case "network":
      return err.sentRequest ? unknown(reason) : { ok: false, permanent: false, unreachable: true, reason };
    case "garbage":
    case "too_large":
      return unknown(reason);
    case "http":
      break;
  }
  // Capped: the patterns below scan it (/chat .* not found/ is quadratic in a long line), and
  // a server that answers with a huge message must not stall the event loop.
  const detail = `${err.errorMessage ?? ""} ${err.envelopeMessage ?? ""}`.slice(0, MAX_DETAIL);
  if (err.status === 401 || err.status === 403) {
    return { ok: false, permanent: false, unreachable: true, reason: "BlueBubbles refused the line's password (connect the line again with the right one)" };
  }
  if (err.status === 413) return { ok: false, permanent: true, reason: "attachment too large for the BlueBubbles server" };
  if (err.status === 400) {
    // Our tempGuid is still in flight there: an earlier attempt is still being sent.
    if (/already queued/i.test(detail)) return unknown("BlueBubbles is still sending an earlier attempt");
    return { ok: false, permanent: true, reason: `BlueBubbles refused the request: ${reason}` };
  }
  if (err.status === 404) return { ok: false, permanent: true, reason: `BlueBubbles does not know this: ${reason}` };
  if (err.errorType === "iMessage Error") {
    if (detail.includes(PRIVATE_API_TEXT)) {
      return { ok: false, permanent: true, reason: "the BlueBubbles Private API is off or its helper is not connected" };
    }
    if (err.dataError === 22) return { ok: false, permanent: true, notRegistered: true, reason: "the recipient is not registered with iMessage" };
    if (/-1700|-1728|Can't get chat|Can.t get (buddy|participant)|chat .* not found|does not exist/i.test(detail)) {
      return { ok: false, permanent: true, reason: `BlueBubbles does not know this chat: ${reason}` };
    }
    if (err.dataError !== null && err.dataError !== 0) return { ok: false, permanent: true, reason };
    if (/sent with an error/i.test(detail)) return { ok: false, permanent: true, reason };
    // "Message Send Error" with no message: its own match timed out, and the message may have gone out.
    return unknown(reason);
  }
  // Any other 5xx (an unhandled error, its 5-minute response timeout): the send may have happened.
  return unknown(reason);
}

function messageService(m: BBMessage, fallback: ServiceName): ServiceName {
  const prefix = m.chats?.[0]?.guid.split(";")[0]?.toLowerCase();
  if (prefix === "sms") return "sms";
  if (prefix === "imessage") return "imessage";
  const s = m.handle?.service?.toLowerCase();
  return s === "sms" ? "sms" : s === "imessage" ? "imessage" : fallback;
}

export function blueBubblesPlatform(client: BlueBubblesClient, line: BlueBubblesLine): Platform {
  const method = line.privateApi ? ("private-api" as const) : ("apple-script" as const);
  const defaultService: ServiceName = line.service === "sms" ? "sms" : "imessage";

  /** As the outbox chose (SMS fallback), else auto lines ask iMessage where they can. */
  async function newChatService(to: string, chosen: ServiceName | undefined): Promise<ServiceName> {
    if (chosen) return chosen;
    if (line.service !== "auto") return defaultService;
    if (!line.privateApi) return "imessage";
    try {
      return (await client.iMessageAvailable(to)) ? "imessage" : "sms";
    } catch {
      return "imessage"; // refused as not registered below, then SMS
    }
  }

  async function sendPart(m: OutgoingMessage, part: Part, i: number, chatGuid: string): Promise<BBMessage> {
    const tempGuid = tempGuidOf(m, i, part);
    // Threading needs the Private API; without it a reply goes out as a plain message.
    const reply = line.privateApi && m.replyToGuid && i === 0 ? { selectedMessageGuid: m.replyToGuid, partIndex: 0 } : {};
    if (part.kind === "text") return client.sendText({ chatGuid, tempGuid, message: part.text, method, ...reply }, line.sendTimeoutMs);
    const file = m.attachments[part.index]!;
    return client.sendAttachment(
      { chatGuid, tempGuid, name: file.filename, mimeType: file.mimeType, bytes: await readFile(file.storageKey), method, isAudioMessage: m.isAudioMessage, ...reply },
      line.sendTimeoutMs,
    );
  }

  async function startChat(m: OutgoingMessage, service: ServiceName, first: Part): Promise<{ chatGuid: string; sent: BBMessage | null }> {
    const chat = await client.newChat(
      {
        addresses: [m.to],
        ...(first.kind === "text" ? { message: first.text, tempGuid: m.idempotencyKey } : {}),
        method,
        service: service === "sms" ? "SMS" : "iMessage",
      },
      line.sendTimeoutMs,
    );
    const sent = first.kind === "text" ? (chat.messages?.find((x) => x.isFromMe) ?? chat.messages?.[0] ?? null) : null;
    return { chatGuid: chat.guid, sent };
  }

  async function sendAll(m: OutgoingMessage, chatGuid: string | null, service: ServiceName, done: SentPart[]): Promise<SendResult & { notRegistered?: boolean }> {
    const parts = partsOf(m);
    if (!parts.length) return { ok: false, permanent: true, reason: "nothing to send" };
    const sent = [...done];
    let guid = chatGuid;
    let carried: ServiceName | null = null;
    for (let i = sent.length; i < parts.length; i++) {
      const part = parts[i]!;
      try {
        let result: BBMessage;
        if (!guid) {
          if (m.isGroup) return { ok: false, permanent: true, reason: "this group chat has no BlueBubbles chat GUID yet; it gets one when the group first writes to the line" };
          const started = await startChat(m, service, part);
          guid = started.chatGuid;
          result = started.sent ?? (await sendPart(m, part, i, guid));
        } else {
          result = await sendPart(m, part, i, guid);
        }
        // Attachment sends and new chats answer 200 even when Messages recorded an error (22: not registered).
        if (result.error) {
          const notRegistered = result.error === 22;
          const why = notRegistered ? "the recipient is not registered with iMessage" : `BlueBubbles reports message error ${result.error}`;
          if (sent.length > 0) return { ok: false, permanent: false, unknown: true, reason: `${why} (after ${sent.length} of ${parts.length} parts were sent)` };
          return { ok: false, permanent: true, notRegistered, reason: why };
        }
        carried ??= messageService(result, service);
        sent.push({ guid: result.guid, sentAt: result.dateCreated });
      } catch (err) {
        const outcome = classify(err, true);
        // A later part failed after earlier ones went out: never permanent (the rest is retried), never resent whole.
        if (sent.length > 0 && outcome.permanent) return { ok: false, permanent: false, unknown: true, reason: `${outcome.reason} (after ${sent.length} of ${parts.length} parts were sent)` };
        return outcome;
      }
    }
    const first = sent[0]!;
    return { ok: true, guid: first.guid, sentAt: first.sentAt, service: carried ?? service, providerChatId: guid ?? undefined };
  }

  async function chatAction(a: OutgoingAction, what: string, act: (chatGuid: string) => Promise<unknown>): Promise<SendResult> {
    if (!line.privateApi) return { ok: false, permanent: true, reason: `${what} need the BlueBubbles Private API, which this line does not have` };
    if (!a.providerChatId) return { ok: false, permanent: true, reason: "no BlueBubbles chat GUID is known for this chat yet" };
    try {
      await act(a.providerChatId);
      return { ok: true, guid: `${a.idempotencyKey}`, sentAt: Date.now() };
    } catch (err) {
      return classify(err, false);
    }
  }

  return {
    name: "bluebubbles",

    async sendMessage(m, resume) {
      // An SMS fallback never goes into the contact's iMessage chat: it starts (or finds) their SMS chat.
      const smsFallback = m.service === "sms" && !m.isGroup && !m.providerChatId?.toLowerCase().startsWith("sms;");
      const chatGuid = smsFallback ? null : m.providerChatId;
      const service = chatGuid ? defaultService : await newChatService(m.to, m.service);
      const result = await sendAll(m, chatGuid, service, resume?.sentParts ?? []);
      if (!result.ok) {
        // Refused as not registered with iMessage: nothing was sent; the outbox decides whether it goes as SMS.
        const { notRegistered, ...rest } = result;
        return notRegistered ? { ...rest, notIMessage: true } : rest;
      }
      return result;
    },

    async iMessageReachable(handle) {
      // The availability check needs the Private API; without it only a send can tell.
      if (!line.privateApi) return null;
      return client.iMessageAvailable(handle);
    },

    async reconcile(m, since, knownGuids): Promise<ReconcileResult> {
      const parts = partsOf(m);
      let found: BBMessage[];
      try {
        const query = { after: since, sort: "ASC" as const, limit: 1000, with: ["chat", "attachment"] };
        found = (await client.queryMessages(m.providerChatId ? { ...query, chatGuid: m.providerChatId } : query)).messages;
      } catch (err) {
        if (err instanceof BlueBubblesError && err.kind === "http" && err.status === 404) return { found: false };
        return { found: null, reason: `could not ask BlueBubbles whether it sent the message: ${describeBlueBubblesError(err)}`, unreachable: true };
      }
      const ours = found.filter(
        (x) =>
          x.isFromMe &&
          !x.error &&
          !knownGuids.has(x.guid) &&
          !x.associatedMessageType &&
          (m.providerChatId || (x.chats ?? []).some((c) => chatAddress(c.guid) === m.to)),
      );
      const sentParts: SentPart[] = [];
      let after = since;
      for (const part of parts) {
        const want =
          part.kind === "text" ? { text: part.text, attachmentNames: [] } : { text: null, attachmentNames: [m.attachments[part.index]!.filename] };
        const match = ours.find(
          (x) =>
            x.dateCreated >= after &&
            !sentParts.some((p) => p.guid === x.guid) &&
            sameContent(want, { text: x.text || null, attachmentNames: (x.attachments ?? []).map((a) => a.transferName ?? "") }),
        );
        if (!match) break;
        sentParts.push({ guid: match.guid, sentAt: match.dateCreated });
        after = match.dateCreated;
      }
      if (sentParts.length === parts.length && parts.length > 0) {
        const first = ours.find((x) => x.guid === sentParts[0]!.guid)!;
        return { found: true, guid: first.guid, sentAt: first.dateCreated, service: messageService(first, defaultService), providerChatId: first.chats?.[0]?.guid };
      }
      return { found: false, sentParts };
    },

    sendReaction: (r: OutgoingReaction) =>
      chatAction(r, "Reactions", (chatGuid) =>
        client.react({ chatGuid, selectedMessageGuid: r.targetGuid, reaction: (r.added ? r.type : `-${r.type}`) as BBReaction }, line.sendTimeoutMs),
      ),
    // BlueBubbles 1.9.9's DELETE handler starts typing instead of stopping it (fixed in later
    // releases): the call is still the documented one, and a sent message clears typing anyway.
    sendTyping: (t: OutgoingTyping) => chatAction(t, "Typing indicators", (chatGuid) => (t.isTyping ? client.startTyping(chatGuid) : client.stopTyping(chatGuid))),
    sendReceipt: (a: OutgoingAction) => chatAction(a, "Read receipts", (chatGuid) => client.markRead(chatGuid)),
  };
}

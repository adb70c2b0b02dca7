import { z } from "zod";
import type { Line } from "../generated/prisma/client";
import { config } from "../kernel/config";
import { ApiError } from "../kernel/errors";
import type { StoredBlob } from "../storage/blobs";
import { inboundTokenMatches, providerLine } from "./connection";
import { withDownloadSlot } from "./download-slots";
import type { BodySink } from "./http";
import type { InboundRequest, ProviderLine } from "./provider";
import { REACTION_TYPES } from "./reaction-types";
import { findProvider } from "./registry";
import type { DeliveryReport, ProviderAttachmentRef, ProviderInbound } from "./types";


export const MAX_TEXT_LENGTH = 20_000;
export const MAX_INBOUND_ATTACHMENT_BYTES = 100 * 1024 * 1024;

const BridgeAttachmentSchema = z.object({
  filename: z.string().min(1).max(255),
  mimeType: z.string().regex(/^[\w.+-]+\/[\w.+-]+$/, "must be a MIME type such as image/png"),
  content: z.custom<Uint8Array>((v) => v instanceof Uint8Array, "must be bytes"),
});

const base = {
  lineId: z.string(),
  sender: z.string().min(1),
  sentAt: z.number().int().positive().optional(),
};

const BridgeMessageSchema = z.object({
  type: z.literal("message"),
  ...base,
  guid: z.string().min(1).max(200).optional(),
  text: z.string().max(MAX_TEXT_LENGTH).nullable().optional(),
  attachment: BridgeAttachmentSchema.optional(),
  isAudioMessage: z.boolean().optional(),
  transcription: z.string().max(MAX_TEXT_LENGTH).nullable().optional(),
  group: z
    .object({
      id: z.string().min(1).max(200).optional(),
      participants: z.array(z.string().min(1)).min(1).max(100),
      name: z.string().max(200).nullable().optional(),
    })
    .optional(),
  replyToGuid: z.string().min(1).max(200).nullable().optional(),
  service: z.enum(["imessage", "sms"]).optional(),
  providerChatId: z.string().min(1).max(500).optional(),
});

const BridgeReactionSchema = z.object({
  type: z.literal("reaction"),
  ...base,
  target: z.string().min(1),
  reaction: z.enum(REACTION_TYPES),
  added: z.boolean(),
});

const BridgeTypingSchema = z.object({ type: z.literal("typing"), ...base, isTyping: z.boolean() });
const BridgeReceiptSchema = z.object({ type: z.literal("receipt"), ...base });

export const BridgeEventSchema = z.discriminatedUnion("type", [BridgeMessageSchema, BridgeReactionSchema, BridgeTypingSchema, BridgeReceiptSchema]);

export type BridgeEvent = z.infer<typeof BridgeEventSchema>;
export type BridgeOf<T extends BridgeEvent["type"]> = Omit<Extract<BridgeEvent, { type: T }>, "type" | "lineId">;

interface InboundChat {
  identifier: string;
  isGroup: boolean;
  participants: string[];
  name: string | null;
  service: string;
  providerChatId: string | null;
  /** Only into a chat we already have (our own message in a group): else the event is ignored. */
  existingOnly: boolean;
}

export interface InboundFile {
  filename: string;
  mimeType: string;
  blob: StoredBlob;
  transcription: string | null;
}

/** Any source's inbound event, normalized: handles normalized, bytes already in storage, defaults filled in. */
export type InboundEvent =
  | {
      type: "message";
      guid: string;
      sender: string;
      isFromMe: boolean;
      at: number;
      chat: InboundChat;
      text: string | null;
      file: InboundFile | null;
      isAudioMessage: boolean | null;
      replyToGuid: string | null;
      service: string;
      optOut: "stop" | "start" | null;
    }
  | {
      type: "reaction";
      sender: string;
      at: number;
      target: string;
      reaction: (typeof REACTION_TYPES)[number];
      added: boolean;
      /** A provider's key: taken in once per line. */
      once: string | null;
    }
  | { type: "typing"; sender: string; at: number; isTyping: boolean }
  | { type: "receipt"; sender: string; at: number; once: string | null }
  | { type: "delivery"; guid: string; report: DeliveryReport; segments: number | null };

const utf8 = new TextDecoder();

function decodeBody(format: "json" | "form", request: InboundRequest, label: string): unknown {
  const text = utf8.decode(request.body);
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

/** A provider's webhook for `line`, checked (the line's token, the provider's own verification) and parsed into events. Refusals are thrown as ApiError. */
export function readProviderWebhook(line: Line | null, request: InboundRequest): { line: Line; pl: ProviderLine; events: ProviderInbound[]; reply?: { contentType: string; body: string } } {
  // Made only when thrown: an Error's stack costs more than the rest of the check.
  const unauthorized = () => new ApiError("invalid_inbound_token", "Missing or wrong token for this line's inbound URL.");
  const provider = line ? findProvider(line.provider) : null;
  if (!line || !provider?.inbound || line.isSandbox) throw unauthorized();
  const inbound = provider.inbound;
  // Signed providers' too: a request signed correctly but without the line's token is refused.
  if (!inboundTokenMatches(line, request.url.searchParams.get("token"))) throw unauthorized();
  const pl = providerLine(line);
  if (inbound.auth === "signature") {
    const refusal = inbound.verify ? inbound.verify(request, pl) : { code: "invalid_signature" as const, message: "This provider's webhooks cannot be verified." };
    if (refusal) throw new ApiError(refusal.code, refusal.message);
  }
  const body = decodeBody(inbound.format ?? "json", request, provider.label);
  try {
    return { line, pl, events: inbound.parse(body, pl), ...(inbound.reply ? { reply: inbound.reply } : {}) };
  } catch (err) {
    if (err instanceof ApiError) throw err;
    throw new ApiError("invalid_json", `Not a ${provider.label} webhook body: ${(err as Error).message.slice(0, 200)}`);
  }
}

/** A provider's attachment streamed into `sink` in a download slot; null when the provider fetches none. */
export async function fetchProviderAttachment<R>(line: Line, pl: ProviderLine, ref: ProviderAttachmentRef, sink: BodySink<R>): Promise<{ content: R; mimeType: string | null } | null> {
  const provider = findProvider(line.provider);
  if (!provider?.downloadAttachment) return null;
  const maxBytes = config().PROVIDER_MAX_ATTACHMENT_BYTES;
  return withDownloadSlot({ accountId: line.accountId ?? "", lineId: line.id }, () => provider.downloadAttachment!(pl, ref, { maxBytes, sink }));
}

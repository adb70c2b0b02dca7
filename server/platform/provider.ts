import type { z } from "zod";
import type { BodySink } from "./http";
import type { Platform, ProbeResult, ProviderAttachmentRef, ProviderInbound } from "./types";

export interface ProviderLine<Settings = unknown, Secrets = unknown> {
  id: string;
  handle: string;
  service: "imessage" | "sms" | "auto";
  advancedFeatures: boolean;
  settings: Settings;
  secrets: Secrets;
  inboundUrl: string;
}

export interface InboundRequest {
  url: URL;
  headers: Headers;
  body: Uint8Array;
}

export interface InboundRefusal {
  /** invalid_signature (403) is Twilio's answer to a bad signature; invalid_webhook_signature (401) SMS Gateway's. */
  code: "invalid_signature" | "invalid_webhook_signature";
  message: string;
}

export interface Provider<Config = unknown, Settings = unknown, Secrets = unknown> {
  name: string;
  label: string;
  configSchema: z.ZodType<Config>;
  split(config: Config): { settings: Settings; secrets: Secrets | null };
  load(settings: unknown, secrets: unknown): { settings: Settings; secrets: Secrets };
  /** The line's base URL: its sealed secrets are bound to it. */
  destination?(settings: Settings): string;
  /** Never a secret; URLs with credentials masked. */
  describe(settings: Settings): Record<string, string | number | boolean | null>;
  platform(line: ProviderLine<Settings, Secrets>): Platform;
  /** A claim's lease outlasts it. */
  sendTimeoutMs?(settings: Settings): number;
  service?: "sms";
  deliveryReports?: boolean;
  /** Then the batch runner may send in parallel (simulated). */
  idempotentSends: boolean;
  monitored: boolean;
  simulator?: boolean;
  probe(line: ProviderLine<Settings, Secrets>): Promise<ProbeResult>;
  warnings?(settings: Settings): string[];
  /** Also removes this line's registrations under other addresses; returns warnings to show. */
  registerWebhooks?(line: ProviderLine<Settings, Secrets>): Promise<string[]>;
  /** Exactly at the current inbound URL and nowhere else of ours; the line monitor registers again when not. */
  webhooksRegistered?(line: ProviderLine<Settings, Secrets>): Promise<boolean>;
  /** The URL's token is checked first (constant time), for every provider; `auth: "signature"`: `verify` then checks the signature. */
  inbound?: {
    auth: "token" | "signature";
    verify?(request: InboundRequest, line: ProviderLine<Settings, Secrets>): InboundRefusal | null;
    format?: "json" | "form";
    /** Throws on a body not of the provider's shape: an ApiError names the code to answer, anything else is invalid_json. */
    parse(body: unknown, line: ProviderLine<Settings, Secrets>): ProviderInbound[];
    /** When the provider expects a body of its own (Twilio: an empty TwiML document). */
    reply?: { contentType: string; body: string };
  };
  /** `after` is on the provider's clock (Unix ms); oldest first. */
  catchUp?(line: ProviderLine<Settings, Secrets>, after: number, page: { offset: number; limit: number }): Promise<ProviderInbound[]>;
  downloadAttachment?<R>(line: ProviderLine<Settings, Secrets>, ref: ProviderAttachmentRef, opts: { maxBytes: number; sink: BodySink<R> }): Promise<{ content: R; mimeType: string | null }>;
}

// The registry holds providers type-erased: its methods take what the same provider's schemas produced.
export type AnyProvider = Provider<unknown, unknown, unknown>;

export function defineProvider<C, S, K>(provider: Provider<C, S, K>): Provider<C, S, K> {
  return provider;
}

export function smsFromContact(m: {
  guid: string;
  sender: string;
  text: string | null;
  attachments?: ProviderAttachmentRef[];
  sentAt: number;
  optOut?: "stop" | "start";
}): ProviderInbound {
  return {
    kind: "message",
    guid: m.guid,
    sender: m.sender,
    isFromMe: false,
    tempGuid: null,
    providerChatId: null,
    group: null,
    text: m.text,
    attachments: m.attachments ?? [],
    isAudioMessage: false,
    replyToGuid: null,
    service: "sms",
    sentAt: m.sentAt,
    ...(m.optOut ? { optOut: m.optOut } : {}),
  };
}

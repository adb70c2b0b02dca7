import type { z } from "zod";
import type { BodySink } from "./http";
import type { Platform, ProbeResult, ProviderAttachmentRef, ProviderInbound } from "./types";

// What one provider folder exports (server/platform/<name>/index.ts): its settings schema, how
// to reach it for a line, and how it talks back. The registry lists them by name.

/** A line as a provider sees it: its settings and decrypted secrets, validated. */
export interface ProviderLine<Settings = unknown, Secrets = unknown> {
  id: string;
  handle: string;
  /** imessage | sms | auto: what the owner asked the line to carry. */
  service: "imessage" | "sms" | "auto";
  /** The probed "advanced features" (Private API on BlueBubbles). */
  advancedFeatures: boolean;
  settings: Settings;
  secrets: Secrets;
  /** Where the provider must send this line's webhooks (PUBLIC_URL + /api/inbound/<line>?token=...). */
  inboundUrl: string;
}

/** An inbound webhook request, as received. */
export interface InboundRequest {
  url: URL;
  headers: Headers;
  body: Uint8Array;
}

/** Why a provider's webhook is refused: the error code and its HTTP status come from server/kernel/errors.ts. */
export interface InboundRefusal {
  /** invalid_signature (403): Twilio's answer to a bad signature; invalid_webhook_signature (401): a signature or timestamp that does not verify (SMS Gateway). */
  code: "invalid_signature" | "invalid_webhook_signature";
  message: string;
}

export interface Provider<Config = unknown, Settings = unknown, Secrets = unknown> {
  name: string;
  /** Shown in the dashboard. */
  label: string;
  /** `--provider-config` as an operator writes it; zod gives the errors. */
  configSchema: z.ZodType<Config>;
  /** Splits a validated config into what is stored readable and what is encrypted. */
  split(config: Config): { settings: Settings; secrets: Secrets | null };
  /** Parses what split() stored, back from the database. */
  load(settings: unknown, secrets: unknown): { settings: Settings; secrets: Secrets };
  /** Where the line's secrets are sent (its base URL): its sealed secrets are bound to it. */
  destination?(settings: Settings): string;
  /** Settings safe to show anywhere: never a secret; URLs with credentials masked. */
  describe(settings: Settings): Record<string, string | number | boolean | null>;
  /** The platform that sends for one line. */
  platform(line: ProviderLine<Settings, Secrets>): Platform;
  /** How long one send may take at the provider (a claim's lease outlasts it). */
  sendTimeoutMs?(settings: Settings): number;
  /** A provider that carries one service only (SMS providers): lines connected to it report it. */
  service?: "sms";
  /** Whether the provider reports delivery (delivered, undelivered) after it accepted a message. */
  deliveryReports?: boolean;
  /** Whether sends are idempotent by key (simulated): then the batch runner may send in parallel. */
  idempotentSends: boolean;
  /**
   * Whether its lines live on a device or service outside this process: probed, caught up after
   * downtime, with a health (connected, degraded, disconnected), and with webhooks that must
   * reach PUBLIC_URL. The built-in simulated platform is not.
   */
  monitored: boolean;
  /** The built-in other phone: the simulator endpoints play the contacts of its lines. */
  simulator?: boolean;
  /** Asks the provider what the line can do (and whether it answers at all). */
  probe(line: ProviderLine<Settings, Secrets>): Promise<ProbeResult>;
  /**
   * Standing problems with how this service is set up for the provider (a PUBLIC_URL it cannot
   * call), shown with every connection test and on the dashboard's lines page.
   */
  warnings?(settings: Settings): string[];
  /**
   * Points the provider's webhooks at the line's inbound URL (removing this line's registrations
   * under any other address). Returns warnings to show. Providers without
   * `webhooksRegistered` register nothing at the provider and only say what the operator sets.
   */
  registerWebhooks?(line: ProviderLine<Settings, Secrets>): Promise<string[]>;
  /**
   * Whether the provider's webhooks for this line are exactly at its current inbound URL (and
   * nowhere else of ours): the server's line monitor registers again when they are not.
   */
  webhooksRegistered?(line: ProviderLine<Settings, Secrets>): Promise<boolean>;
  /**
   * Inbound webhooks. The URL's token is checked first for every provider (constant time);
   * `auth: "signature"`: `verify` then checks the provider's signature and answers why it refuses.
   */
  inbound?: {
    auth: "token" | "signature";
    verify?(request: InboundRequest, line: ProviderLine<Settings, Secrets>): InboundRefusal | null;
    /** How the body is encoded: JSON (the default) or an HTML form (application/x-www-form-urlencoded). */
    format?: "json" | "form";
    /**
     * Maps one webhook body (parsed JSON, or the form's fields as a URLSearchParams) to events.
     * Throws on a body that is not the provider's shape: an ApiError says which code to answer
     * (missing_required_parameter, invalid_parameter_value), anything else is invalid_json.
     */
    parse(body: unknown, line: ProviderLine<Settings, Secrets>): ProviderInbound[];
    /** The body of a 200 answer when the provider expects one of its own (Twilio: an empty TwiML document). */
    reply?: { contentType: string; body: string };
  };
  /** Messages after `after` (provider clock, Unix ms), oldest first, a page at a time. */
  catchUp?(line: ProviderLine<Settings, Secrets>, after: number, page: { offset: number; limit: number }): Promise<ProviderInbound[]>;
  /** Streams an inbound attachment's bytes into `sink` as they arrive (at most maxBytes); returns what the sink made. */
  downloadAttachment?<R>(line: ProviderLine<Settings, Secrets>, ref: ProviderAttachmentRef, opts: { maxBytes: number; sink: BodySink<R> }): Promise<{ content: R; mimeType: string | null }>;
}

// Each provider is defined with its own types; the registry holds them type-erased (its
// methods take what the same provider's schemas produced: configSchema, then load).
export type AnyProvider = Provider<unknown, unknown, unknown>;

export function defineProvider<C, S, K>(provider: Provider<C, S, K>): Provider<C, S, K> {
  return provider;
}

/**
 * A contact's SMS (or MMS) to the line, in a one-to-one chat: how the SMS providers report a
 * received message, from a webhook or from catch-up alike.
 */
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

import type { z } from "zod";
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
  /** Settings safe to show anywhere: never a secret; URLs with credentials masked. */
  describe(settings: Settings): Record<string, string | number | boolean | null>;
  /** The platform that sends for one line. */
  platform(line: ProviderLine<Settings, Secrets>): Platform;
  /** How long one send may take at the provider (a claim's lease outlasts it). */
  sendTimeoutMs?(settings: Settings): number;
  /** Whether sends are idempotent by key (simulated): then the batch runner may send in parallel. */
  idempotentSends: boolean;
  /** Asks the provider what the line can do (and whether it answers at all). */
  probe(line: ProviderLine<Settings, Secrets>): Promise<ProbeResult>;
  /** On connect: point the provider's webhooks at the line's inbound URL. Returns warnings to show. */
  registerWebhooks?(line: ProviderLine<Settings, Secrets>): Promise<string[]>;
  /**
   * Inbound webhooks. `auth: "token"`: the URL's token is checked before parse (constant time);
   * providers that sign their requests verify here and answer false for a bad signature.
   */
  inbound?: {
    auth: "token" | "signature";
    verify?(request: InboundRequest, line: ProviderLine<Settings, Secrets>): boolean;
    /** Maps one webhook body to events; throws on a body that is not the provider's shape. */
    parse(body: unknown, line: ProviderLine<Settings, Secrets>): ProviderInbound[];
  };
  /** Messages after `after` (provider clock, Unix ms), oldest first, a page at a time. */
  catchUp?(line: ProviderLine<Settings, Secrets>, after: number, page: { offset: number; limit: number }): Promise<ProviderInbound[]>;
  /** Fetches an inbound attachment's bytes, at most maxBytes. */
  downloadAttachment?(line: ProviderLine<Settings, Secrets>, ref: ProviderAttachmentRef, maxBytes: number): Promise<{ bytes: Uint8Array; mimeType: string | null }>;
}

// Each provider is defined with its own types; the registry holds them type-erased (its
// methods take what the same provider's schemas produced: configSchema, then load).
export type AnyProvider = Provider<unknown, unknown, unknown>;

export function defineProvider<C, S, K>(provider: Provider<C, S, K>): Provider<C, S, K> {
  return provider;
}

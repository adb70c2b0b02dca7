import type { Message, Reaction, WebhookEventName } from "./generated.js";
import { checkSignatures, parsePayload, readSignedHeaders, type HeaderSource, type SignInput, type VerifyOptions } from "./webhook-checks.js";

export { DEFAULT_TOLERANCE_MS, WebhookVerificationError, type HeaderSource, type SignInput, type VerifyOptions, type WebhookVerificationReason } from "./webhook-checks.js";

// Web Crypto only, so it runs on any runtime; the two schemes of server/webhooks/signing.ts
// (docs/api.md, Webhooks): hex keyed with the whole secret, Standard Webhooks with its base64 part.

const SECRET_PREFIX = "whsec_";

/** data of message.failed: an outbox item that ended `failed`. */
export interface MessageFailedData {
  object: "outbox_item";
  outbox_id: string;
  line_id: string;
  line_handle: string | null;
  chat_id: string;
  to: string;
  error: string;
  attempts: number;
  failed_at: number;
}

/** data of line.status_changed: a provider line's health changed (extension). */
export interface LineStatusChangedData {
  object: "line_status";
  line_id: string;
  line_handle: string;
  provider: string;
  status: "connected" | "degraded" | "disconnected";
  previous_status: "connected" | "degraded" | "disconnected";
  status_reason: string | null;
  changed_at: number;
}

type WithLine<T> = T & { line_handle?: string };

interface Envelope<E extends WebhookEventName, D> {
  event: E;
  data: D;
  timestamp: number;
  /** Deduplicate on it: a delivery may arrive twice. */
  delivery_id: string;
}

/** A verified delivery: switch on `event` to narrow `data`. */
export type WebhookEvent =
  | Envelope<"message.received" | "message.sent" | "message.delivered" | "message.undelivered", WithLine<Message>>
  | Envelope<"reaction.added" | "reaction.removed", WithLine<Reaction>>
  | Envelope<"message.failed", MessageFailedData>
  | Envelope<"line.status_changed", LineStatusChangedData>;

const encoder = new TextEncoder();

function base64ToBytes(text: string): Uint8Array {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

function bytesToBase64(bytes: Uint8Array): string {
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary);
}

const bytesToHex = (bytes: Uint8Array) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

async function hmac(key: Uint8Array, message: string): Promise<Uint8Array> {
  const cryptoKey = await crypto.subtle.importKey("raw", key as BufferSource, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return new Uint8Array(await crypto.subtle.sign("HMAC", cryptoKey, encoder.encode(message) as BufferSource));
}

function standardKey(secret: string): Uint8Array {
  return secret.startsWith(SECRET_PREFIX) ? base64ToBytes(secret.slice(SECRET_PREFIX.length)) : encoder.encode(secret);
}

const hexSignature = async (secret: string, timestampMs: string, rawBody: string) =>
  bytesToHex(await hmac(encoder.encode(secret), `${timestampMs}.${rawBody}`));

const standardSignature = async (secret: string, id: string, seconds: string, rawBody: string) =>
  bytesToBase64(await hmac(standardKey(secret), `${id}.${seconds}.${rawBody}`));

/** Verifies the RAW body (the exact text received), or throws WebhookVerificationError; several secrets while rotating. */
export async function verifyWebhook(rawBody: string, headers: HeaderSource, secret: string | readonly string[], options: VerifyOptions = {}): Promise<WebhookEvent> {
  const secrets = typeof secret === "string" ? [secret] : secret;
  if (secrets.length === 0) throw new TypeError("verifyWebhook needs at least one secret");
  const signed = readSignedHeaders(headers, options);
  const expected = await Promise.all(
    secrets.map((s) => (signed.scheme === "hex" ? hexSignature(s, signed.timestampMs, rawBody) : standardSignature(s, signed.id, signed.seconds, rawBody))),
  );
  checkSignatures(expected, signed.candidates);
  return parsePayload(rawBody) as WebhookEvent;
}

/** The headers the server sends with rawBody: for receivers' own tests. */
export async function signWebhook({ secret, rawBody, timestamp, deliveryId, secrets = [] }: SignInput): Promise<Record<string, string>> {
  const previous = [...new Set(secrets)].filter((s) => s !== secret);
  const ms = String(timestamp);
  const seconds = String(Math.floor(timestamp / 1000));
  const standard = await Promise.all([secret, ...previous].map(async (s) => `v1,${await standardSignature(s, deliveryId, seconds, rawBody)}`));
  const headers: Record<string, string> = {
    "Content-Type": "application/json",
    "X-Webhook-Signature": await hexSignature(secret, ms, rawBody),
    "X-Webhook-Timestamp": ms,
    "X-Webhook-Delivery-Id": deliveryId,
    "webhook-id": deliveryId,
    "webhook-timestamp": seconds,
    "webhook-signature": standard.join(" "),
  };
  if (previous.length > 0) {
    headers["X-Webhook-Signature-Previous"] = (await Promise.all(previous.map((s) => hexSignature(s, ms, rawBody)))).join(" ");
  }
  return headers;
}

export interface TestDeliveryInput<E extends WebhookEvent["event"]> {
  secret: string;
  event: E;
  data: Extract<WebhookEvent, { event: E }>["data"];
  deliveryId?: string;
  timestamp?: number;
}

/** A correctly signed delivery (raw body and headers), to feed to your own handler in tests. */
export async function buildTestDelivery<E extends WebhookEvent["event"]>({
  secret,
  event,
  data,
  deliveryId = `dlv_test_${crypto.randomUUID().replaceAll("-", "")}`,
  timestamp = Date.now(),
}: TestDeliveryInput<E>): Promise<{ rawBody: string; headers: Record<string, string> }> {
  const rawBody = JSON.stringify({ event, data, timestamp, delivery_id: deliveryId });
  return { rawBody, headers: await signWebhook({ secret, rawBody, timestamp, deliveryId }) };
}

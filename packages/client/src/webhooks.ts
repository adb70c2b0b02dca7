import type { Message, Reaction, WebhookEventName } from "./generated.js";

// Webhook verification for receivers, with Web Crypto only (crypto.subtle), so it runs in
// Node 20+, browsers and edge runtimes. The same two schemes as the server's
// server/webhooks/signing.ts:
//
// 1. X-Webhook-Signature: lowercase hex HMAC-SHA256 of `${X-Webhook-Timestamp}.${rawBody}`,
//    keyed with the whole secret string (`whsec_...`, UTF-8); the timestamp is Unix ms. During a
//    rotation, the old secret's signature is in X-Webhook-Signature-Previous.
// 2. Standard Webhooks: webhook-signature `v1,<base64 HMAC-SHA256 of "${id}.${seconds}.${rawBody}">`
//    (space-separated, one per valid secret), keyed with the base64-decoded part after whsec_.

const SECRET_PREFIX = "whsec_";
export const DEFAULT_TOLERANCE_MS = 300_000;

/** data of message.failed: an outbox message that ended `failed`. */
export interface MessageFailedData {
  object: "outbox_item";
  outbox_id: string;
  line_id: string;
  line_handle: string | null;
  chat_id: string;
  to: string;
  error: string;
  attempts: number;
  /** Unix ms */
  failed_at: number;
}

/** message.* and reaction.* data also carry the line's handle. */
type WithLine<T> = T & { line_handle?: string };

interface Envelope<E extends WebhookEventName, D> {
  event: E;
  data: D;
  /** Unix ms, also X-Webhook-Timestamp. */
  timestamp: number;
  /** dlv_ ID, also X-Webhook-Delivery-Id: deduplicate on it (a delivery may arrive twice). */
  delivery_id: string;
}

/** A verified delivery: switch on `event` to narrow `data`. */
export type WebhookEvent =
  | Envelope<"message.received" | "message.sent", WithLine<Message>>
  | Envelope<"reaction.added" | "reaction.removed", WithLine<Reaction>>
  | Envelope<"message.failed", MessageFailedData>;

export type WebhookVerificationReason = "missing_header" | "invalid_header" | "timestamp_out_of_tolerance" | "bad_signature" | "invalid_body";

export class WebhookVerificationError extends Error {
  constructor(
    readonly reason: WebhookVerificationReason,
    message: string,
  ) {
    super(message);
    this.name = "WebhookVerificationError";
  }
}

/** Headers as a Headers object (fetch, edge) or a plain record (Node's req.headers). */
export type HeaderSource = Headers | Record<string, string | string[] | undefined>;

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

// Constant time in the candidate's content: every character is compared, and a candidate of
// the wrong length (signature lengths are public) is compared against the expected value itself.
function safeEqual(expected: string, candidate: string): boolean {
  const sameLength = expected.length === candidate.length;
  const other = sameLength ? candidate : expected;
  let diff = 0;
  for (let i = 0; i < expected.length; i++) diff |= expected.charCodeAt(i) ^ other.charCodeAt(i);
  return diff === 0 && sameLength;
}

function anyMatch(expected: readonly string[], candidates: readonly string[]): boolean {
  let found = false;
  // No early exit: the time does not tell which pair matched.
  for (const e of expected) for (const c of candidates) found = safeEqual(e, c) || found;
  return found;
}

function headerReader(headers: HeaderSource): (name: string) => string | undefined {
  if (typeof Headers !== "undefined" && headers instanceof Headers) return (name) => headers.get(name) ?? undefined;
  const lower = new Map<string, string>();
  for (const [key, value] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (value !== undefined) lower.set(key.toLowerCase(), Array.isArray(value) ? value.join(" ") : value);
  }
  return (name) => lower.get(name);
}

function parseTimestamp(value: string, name: string): number {
  if (!/^\d{1,16}$/.test(value)) throw new WebhookVerificationError("invalid_header", `${name} is not a number`);
  return Number(value);
}

function checkTolerance(timestampMs: number, now: number, toleranceMs: number): void {
  if (Math.abs(now - timestampMs) > toleranceMs) {
    throw new WebhookVerificationError(
      "timestamp_out_of_tolerance",
      `timestamp is ${Math.round((now - timestampMs) / 1000)} s away from now (tolerance ${toleranceMs / 1000} s)`,
    );
  }
}

function parsePayload(rawBody: string): WebhookEvent {
  let body: unknown;
  try {
    body = JSON.parse(rawBody);
  } catch {
    throw new WebhookVerificationError("invalid_body", "body is not valid JSON");
  }
  const b = body as Partial<WebhookEvent> | null;
  if (
    typeof b !== "object" || b === null ||
    typeof b.event !== "string" ||
    typeof b.data !== "object" || b.data === null || Array.isArray(b.data) ||
    typeof b.timestamp !== "number" ||
    typeof b.delivery_id !== "string"
  ) {
    throw new WebhookVerificationError("invalid_body", "body is not a webhook payload { event, data, timestamp, delivery_id }");
  }
  return b as WebhookEvent;
}

export interface VerifyOptions {
  /** How far the signed timestamp may be from now; default 5 minutes. */
  toleranceMs?: number;
  /** Unix ms; default Date.now(). */
  now?: number;
}

/**
 * Verifies a delivery against its RAW body (the exact bytes received, as text) and returns the
 * typed event, or throws WebhookVerificationError. Checks X-Webhook-Signature (or
 * X-Webhook-Signature-Previous) when the X-Webhook-* headers are present, otherwise the Standard
 * Webhooks headers. Pass several secrets while rotating.
 */
export async function verifyWebhook(
  rawBody: string,
  headers: HeaderSource,
  secret: string | readonly string[],
  { toleranceMs = DEFAULT_TOLERANCE_MS, now = Date.now() }: VerifyOptions = {},
): Promise<WebhookEvent> {
  const secrets = typeof secret === "string" ? [secret] : secret;
  if (secrets.length === 0) throw new TypeError("verifyWebhook needs at least one secret");
  const get = headerReader(headers);
  const signature = get("x-webhook-signature");
  const timestamp = get("x-webhook-timestamp");

  if (signature !== undefined || timestamp !== undefined) {
    if (signature === undefined || timestamp === undefined) {
      throw new WebhookVerificationError("missing_header", "X-Webhook-Signature and X-Webhook-Timestamp are both required");
    }
    checkTolerance(parseTimestamp(timestamp, "X-Webhook-Timestamp"), now, toleranceMs);
    const candidates = [signature.trim().toLowerCase(), ...(get("x-webhook-signature-previous") ?? "").toLowerCase().split(/\s+/)];
    const expected = await Promise.all(secrets.map((s) => hexSignature(s, timestamp, rawBody)));
    if (!anyMatch(expected, candidates.filter(Boolean))) throw new WebhookVerificationError("bad_signature", "signature does not match");
  } else {
    const id = get("webhook-id");
    const seconds = get("webhook-timestamp");
    const list = get("webhook-signature");
    if (id === undefined || seconds === undefined || list === undefined) {
      throw new WebhookVerificationError("missing_header", "no X-Webhook-Signature or webhook-signature headers");
    }
    checkTolerance(parseTimestamp(seconds, "webhook-timestamp") * 1000, now, toleranceMs);
    const candidates = list.split(/\s+/).filter((e) => e.startsWith("v1,")).map((e) => e.slice(3));
    const expected = await Promise.all(secrets.map((s) => standardSignature(s, id, seconds, rawBody)));
    if (!anyMatch(expected, candidates)) throw new WebhookVerificationError("bad_signature", "signature does not match");
  }
  // Parsed only once authentic.
  return parsePayload(rawBody);
}

export interface SignInput {
  /** The current secret. */
  secret: string;
  rawBody: string;
  /** Unix ms (the body's timestamp). */
  timestamp: number;
  deliveryId: string;
  /** Older secrets still valid during a rotation. */
  secrets?: readonly string[];
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

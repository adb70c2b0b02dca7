import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { newId } from "../ids";

// Webhook signatures, two schemes on every delivery:
//
// 1. Ours (SPEC "Delivery format", what existing clients verify): X-Webhook-Signature is the
//    lowercase hex HMAC-SHA256 of `${timestampMs}.${rawBody}`, keyed with the secret STRING as
//    shown to the user (the whole `whsec_...` text, UTF-8), X-Webhook-Timestamp in Unix ms.
// 2. Standard Webhooks (standardwebhooks.com), so generic verifiers (svix, standardwebhooks
//    libraries) work unchanged: webhook-signature is `v1,<base64 HMAC-SHA256 of
//    "${id}.${timestampSeconds}.${rawBody}">`, keyed with the base64-DECODED part of
//    `whsec_<base64>`, webhook-timestamp in Unix seconds, webhook-id the delivery id.
//
// One secret therefore serves both schemes; only the key derivation differs, as each scheme
// defines it. A secret without the whsec_ prefix (none are minted so) is used as UTF-8 bytes
// for both.
//
// Rotation: while an old secret is still valid (24 h), a delivery is signed with both.
// webhook-signature lists one `v1,` entry per secret, space-separated, as Standard Webhooks
// prescribes. X-Webhook-Signature keeps exactly ONE hex string, made with the current secret,
// because existing clients compare the header's whole value to one hex digest; the old
// secret's signature goes in X-Webhook-Signature-Previous, which a rotating receiver checks.

const SECRET_PREFIX = "whsec_";

export const DEFAULT_TOLERANCE_MS = 300_000;

export interface WebhookPayload {
  event: string;
  data: Record<string, unknown>;
  timestamp: number;
  delivery_id: string;
}

export type WebhookVerificationReason =
  | "missing_header"
  | "invalid_header"
  | "timestamp_out_of_tolerance"
  | "bad_signature"
  | "invalid_body";

export class WebhookVerificationError extends Error {
  constructor(
    readonly reason: WebhookVerificationReason,
    message: string,
  ) {
    super(message);
    this.name = "WebhookVerificationError";
  }
}

/** A new signing secret: `whsec_` + base64 of 32 random bytes (the Standard Webhooks form). */
export function newWebhookSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString("base64");
}

function standardKey(secret: string): Buffer {
  return secret.startsWith(SECRET_PREFIX)
    ? Buffer.from(secret.slice(SECRET_PREFIX.length), "base64")
    : Buffer.from(secret, "utf8");
}

function hexSignature(secret: string, timestampMs: string, rawBody: string): string {
  return createHmac("sha256", secret).update(`${timestampMs}.${rawBody}`).digest("hex");
}

function standardSignature(secret: string, id: string, timestampS: string, rawBody: string): string {
  return createHmac("sha256", standardKey(secret)).update(`${id}.${timestampS}.${rawBody}`).digest("base64");
}

export interface SignInput {
  /** The current secret. */
  secret: string;
  rawBody: string;
  /** Unix ms of the delivery (the same value as the body's timestamp). */
  timestamp: number;
  deliveryId: string;
  /** Older secrets still valid during a rotation; the current secret, if listed, is skipped. */
  secrets?: readonly string[];
}

/** The headers of one delivery of rawBody. */
export function signWebhook({ secret, rawBody, timestamp, deliveryId, secrets = [] }: SignInput): Record<string, string> {
  const previous = [...new Set(secrets)].filter((s) => s !== secret);
  const ms = String(timestamp);
  const seconds = String(Math.floor(timestamp / 1000));
  const headers: Record<string, string> = {
    "Content-Type": "application/json",
    "X-Webhook-Signature": hexSignature(secret, ms, rawBody),
    "X-Webhook-Timestamp": ms,
    "X-Webhook-Delivery-Id": deliveryId,
    "webhook-id": deliveryId,
    "webhook-timestamp": seconds,
    "webhook-signature": [secret, ...previous]
      .map((s) => `v1,${standardSignature(s, deliveryId, seconds, rawBody)}`)
      .join(" "),
  };
  if (previous.length > 0) {
    headers["X-Webhook-Signature-Previous"] = previous.map((s) => hexSignature(s, ms, rawBody)).join(" ");
  }
  return headers;
}

type HeaderSource = Headers | Record<string, string | string[] | undefined>;

function headerReader(headers: HeaderSource): (name: string) => string | undefined {
  if (headers instanceof Headers) {
    return (name) => headers.get(name) ?? undefined;
  }
  const lower = new Map<string, string>();
  for (const [key, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    // A repeated header only adds candidates to a signature list; for a timestamp it makes
    // the value unparseable, which is rejected below.
    lower.set(key.toLowerCase(), Array.isArray(value) ? value.join(" ") : value);
  }
  return (name) => lower.get(name.toLowerCase());
}

// Constant time in the candidate's content. Signature lengths are fixed by each scheme and so
// public; a candidate of the wrong length is still run through a full-length comparison, so the
// time taken never depends on where, or whether, the bytes differ.
function safeEqual(expected: string, candidate: string): boolean {
  const a = Buffer.from(expected, "utf8");
  const b = Buffer.from(candidate, "utf8");
  const sameLength = a.length === b.length;
  return timingSafeEqual(a, sameLength ? b : a) && sameLength;
}

function anyMatch(expected: readonly string[], candidates: readonly string[]): boolean {
  let found = false;
  // No early exit: every pair is compared, so the time does not reveal which one matched.
  for (const e of expected) for (const c of candidates) found = safeEqual(e, c) || found;
  return found;
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

function parsePayload(rawBody: string): WebhookPayload {
  let body: unknown;
  try {
    body = JSON.parse(rawBody);
  } catch {
    throw new WebhookVerificationError("invalid_body", "body is not valid JSON");
  }
  const b = body as Partial<WebhookPayload> | null;
  if (
    typeof b !== "object" || b === null ||
    typeof b.event !== "string" ||
    typeof b.data !== "object" || b.data === null || Array.isArray(b.data) ||
    typeof b.timestamp !== "number" ||
    typeof b.delivery_id !== "string"
  ) {
    throw new WebhookVerificationError("invalid_body", "body is not a webhook payload { event, data, timestamp, delivery_id }");
  }
  return b as WebhookPayload;
}

export interface VerifyOptions {
  toleranceMs?: number;
  now?: number;
}

/**
 * Verifies a delivery and returns its payload, or throws WebhookVerificationError. Checks
 * X-Webhook-Signature (or X-Webhook-Signature-Previous) when X-Webhook-* headers are present,
 * otherwise the Standard Webhooks headers. Several secrets may be given (rotation).
 */
export function verifyWebhook(
  rawBody: string,
  headers: HeaderSource,
  secret: string | readonly string[],
  { toleranceMs = DEFAULT_TOLERANCE_MS, now = Date.now() }: VerifyOptions = {},
): WebhookPayload {
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
    const expected = secrets.map((s) => hexSignature(s, timestamp, rawBody));
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
    const expected = secrets.map((s) => standardSignature(s, id, seconds, rawBody));
    if (!anyMatch(expected, candidates)) throw new WebhookVerificationError("bad_signature", "signature does not match");
  }
  // Parsed only once authentic: nothing from an unsigned body is ever looked at.
  return parsePayload(rawBody);
}

export interface TestDeliveryInput {
  secret: string;
  event: string;
  data: Record<string, unknown>;
  deliveryId?: string;
  timestamp?: number;
}

/** A correctly signed delivery, for receivers' own tests. */
export function buildTestDelivery({
  secret,
  event,
  data,
  deliveryId = newId("delivery"),
  timestamp = Date.now(),
}: TestDeliveryInput): { rawBody: string; headers: Record<string, string> } {
  const rawBody = JSON.stringify({ event, data, timestamp, delivery_id: deliveryId });
  return { rawBody, headers: signWebhook({ secret, rawBody, timestamp, deliveryId }) };
}

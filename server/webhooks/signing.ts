import { createHmac, randomBytes } from "node:crypto";
import {
  checkSignatures,
  parsePayload,
  readSignedHeaders,
  type HeaderSource,
  type SignInput,
  type VerifyOptions,
  type WebhookPayload,
} from "../../packages/client/src/webhook-checks";
import { newId } from "../kernel/ids";

export {
  
  WebhookVerificationError,
  type SignInput,
  type VerifyOptions,
  type WebhookPayload,
  type WebhookVerificationReason,
} from "../../packages/client/src/webhook-checks";

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

/**
 * Verifies a delivery and returns its payload, or throws WebhookVerificationError. Checks
 * X-Webhook-Signature (or X-Webhook-Signature-Previous) when X-Webhook-* headers are present,
 * otherwise the Standard Webhooks headers. Several secrets may be given (rotation). Everything
 * but the HMAC is the client library's code, so both verify exactly alike.
 */
export function verifyWebhook(rawBody: string, headers: HeaderSource, secret: string | readonly string[], options: VerifyOptions = {}): WebhookPayload {
  const secrets = typeof secret === "string" ? [secret] : secret;
  if (secrets.length === 0) throw new TypeError("verifyWebhook needs at least one secret");
  const signed = readSignedHeaders(headers, options);
  const expected = secrets.map((s) =>
    signed.scheme === "hex" ? hexSignature(s, signed.timestampMs, rawBody) : standardSignature(s, signed.id, signed.seconds, rawBody),
  );
  checkSignatures(expected, signed.candidates);
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

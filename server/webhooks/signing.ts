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

// Two schemes on every delivery (docs/api.md, "Webhooks"): ours keys HMAC-SHA256 with the whole
// `whsec_…` string, Standard Webhooks with its base64-decoded part (without the prefix, both use
// the UTF-8 bytes). During rotation X-Webhook-Signature keeps ONE hex digest, the current secret's,
// since existing clients compare the whole header to one digest; the old one goes in -Previous.

const SECRET_PREFIX = "whsec_";

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

/** Everything but the HMAC is the client library's code, so both verify exactly alike. */
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

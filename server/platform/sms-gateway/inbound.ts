import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import type { z, ZodError, ZodType } from "zod";
import { ApiError } from "../../kernel/errors";
import { normalizeHandle } from "../../kernel/handles";
import { type InboundRefusal, smsFromContact } from "../provider";
import type { ProviderInbound } from "../types";
import {
  SGSmsDeliveredSchema,
  SGSmsFailedSchema,
  SGSmsReceivedSchema,
  SGSmsSentSchema,
  SGWebhookEnvelopeSchema,
  type SGIncomingMessage,
} from "./schemas";

// SMS Gateway webhooks in our terms. Every delivery is signed (webhooks/plugins/
// PayloadSingingPlugin.kt): X-Signature = lowercase hex HMAC-SHA256, keyed with the signing key
// shown in the app, over the raw body followed directly by the X-Timestamp value (Unix
// seconds). The phone retries a webhook for hours and is known to emit one received SMS twice
// under new event IDs, and its `messageId` for a received SMS is a hash of the text alone: a
// received SMS is therefore keyed on its sender, receive time and text, which is also what the
// inbox listing gives, so a webhook and a catch-up of one SMS are one message.

/** How far X-Timestamp may be from our clock. */
const SIGNATURE_TOLERANCE_MS = 5 * 60_000;

/** The signature the gateway sends for `body` at `timestamp`: hex HMAC-SHA256(key, body + timestamp). */
export function webhookSignature(key: string, body: Uint8Array | string, timestamp: string): string {
  return createHmac("sha256", key).update(body).update(timestamp, "utf8").digest("hex");
}

/** Why a webhook's signature does not verify, or null when it does (constant-time comparison). */
export function verifyWebhookSignature(
  key: string,
  request: { headers: Headers; body: Uint8Array },
  now = Date.now(),
): InboundRefusal | null {
  const refuse = (message: string): InboundRefusal => ({ code: "invalid_webhook_signature", message });
  // A line whose key could not be read verifies nothing (an empty HMAC key is no secret).
  if (!key) return refuse("This line has no webhook signing key: connect it again with the one shown in the app.");
  const signature = request.headers.get("x-signature")?.trim();
  const timestamp = request.headers.get("x-timestamp")?.trim();
  if (!signature || !timestamp) return refuse("SMS Gateway webhooks carry X-Signature and X-Timestamp headers; this request lacks them.");
  if (!/^\d{1,12}$/.test(timestamp)) return refuse("X-Timestamp must be a Unix time in seconds.");
  if (Math.abs(now - Number(timestamp) * 1000) > SIGNATURE_TOLERANCE_MS) {
    return refuse("X-Timestamp is more than 5 minutes away from this server's clock (a replay, or a clock that is off).");
  }
  if (!/^[0-9a-fA-F]{64}$/.test(signature)) return refuse("X-Signature must be a hex HMAC-SHA256.");
  const expected = Buffer.from(webhookSignature(key, request.body, timestamp), "hex");
  if (!timingSafeEqual(expected, Buffer.from(signature, "hex"))) {
    return refuse("X-Signature does not match the body: check the line's signing key against the one shown in the app (Settings → Webhooks).");
  }
  return null;
}

/** Our ID of a received SMS: a hash of its sender (normalized), receive time (ms) and text. */
export function receivedGuid(sender: string, receivedAt: number, text: string): string {
  const hash = createHash("sha256").update(`${normalizeHandle(sender)}\n${receivedAt}\n${text}`, "utf8").digest("hex");
  return `in_${hash.slice(0, 32)}`;
}

function received(sender: string, at: number, text: string): ProviderInbound {
  return smsFromContact({ guid: receivedGuid(sender, at, text), sender, text, sentAt: at });
}

/** The value at `path` in `input`, or undefined. */
function valueAt(input: unknown, path: PropertyKey[]): unknown {
  let v = input;
  for (const key of path) {
    if (v === null || typeof v !== "object") return undefined;
    v = (v as Record<PropertyKey, unknown>)[key];
  }
  return v;
}

/** A ZodError as the ApiError to answer: a field that is absent is missing, anything else invalid. */
function refusal(err: ZodError, input: unknown, prefix: PropertyKey[], event: string): ApiError {
  const issue = err.issues[0]!;
  const path = [...prefix, ...issue.path];
  const name = path.map(String).join(".") || "body";
  const what = event ? `SMS Gateway ${event} webhook` : "SMS Gateway webhook";
  if (valueAt(input, path) === undefined) {
    return new ApiError("missing_required_parameter", `${what} without ${name}.`, { param: name });
  }
  return new ApiError("invalid_parameter_value", `${what}: ${name} ${issue.message}.`, { param: name });
}

function parseWith<S extends ZodType>(schema: S, input: unknown, prefix: PropertyKey[], event: string, root: unknown) {
  const parsed = schema.safeParse(input);
  if (!parsed.success) throw refusal(parsed.error, root, prefix, event);
  return parsed.data as z.output<S>;
}

/** One webhook body as events; throws ApiError for a body that is not an SMS Gateway webhook. */
export function mapWebhook(body: unknown): ProviderInbound[] {
  const envelope = parseWith(SGWebhookEnvelopeSchema, body, [], "", body);
  const { event, payload } = envelope;
  const at = ["payload"];
  switch (event) {
    case "sms:received": {
      const p = parseWith(SGSmsReceivedSchema, payload, at, event, body);
      return [received((p.sender || p.phoneNumber)!, p.receivedAt, p.message)];
    }
    case "sms:sent": {
      const p = parseWith(SGSmsSentSchema, payload, at, event, body);
      // partsCount is -1 when the app did not record how many parts it sent.
      const segments = p.partsCount && p.partsCount > 0 ? p.partsCount : null;
      return [{ kind: "status", guid: p.messageId, status: "sent", at: p.sentAt, reason: null, segments }];
    }
    case "sms:delivered": {
      const p = parseWith(SGSmsDeliveredSchema, payload, at, event, body);
      return [{ kind: "status", guid: p.messageId, status: "delivered", at: p.deliveredAt, reason: null, segments: null }];
    }
    case "sms:failed": {
      const p = parseWith(SGSmsFailedSchema, payload, at, event, body);
      return [{ kind: "status", guid: p.messageId, status: "failed", at: p.failedAt, reason: p.reason || "SMS Gateway reports the SMS failed", segments: null }];
    }
    default:
      // system:ping, app:started, sms:cancelled, sms:data-received, mms:*: nothing we keep.
      return [{ kind: "ignored", reason: `SMS Gateway event ${event}` }];
  }
}

/** One inbox row (GET /inbox) as the event its sms:received webhook maps to; other types are ignored. */
export function mapIncoming(m: SGIncomingMessage): ProviderInbound {
  if (m.type !== "SMS") return { kind: "ignored", reason: `SMS Gateway inbox ${m.type} message` };
  return received(m.sender, m.createdAt, m.contentPreview);
}

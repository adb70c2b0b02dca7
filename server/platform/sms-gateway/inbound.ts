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

// Signing: webhooks/plugins/PayloadSingingPlugin.kt. A received SMS is keyed on sender, receive
// time and text (docs/providers.md): the phone repeats it under new event IDs, and its messageId
// hashes the text alone; the inbox listing gives the same three, so webhook and catch-up agree.

const SIGNATURE_TOLERANCE_MS = 5 * 60_000;

export function webhookSignature(key: string, body: Uint8Array | string, timestamp: string): string {
  return createHmac("sha256", key).update(body).update(timestamp, "utf8").digest("hex");
}

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

export function receivedGuid(sender: string, receivedAt: number, text: string): string {
  const hash = createHash("sha256").update(`${normalizeHandle(sender)}\n${receivedAt}\n${text}`, "utf8").digest("hex");
  return `in_${hash.slice(0, 32)}`;
}

function received(sender: string, at: number, text: string): ProviderInbound {
  return smsFromContact({ guid: receivedGuid(sender, at, text), sender, text, sentAt: at });
}

function valueAt(input: unknown, path: PropertyKey[]): unknown {
  let v = input;
  for (const key of path) {
    if (v === null || typeof v !== "object") return undefined;
    v = (v as Record<PropertyKey, unknown>)[key];
  }
  return v;
}

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

export function mapIncoming(m: SGIncomingMessage): ProviderInbound {
  if (m.type !== "SMS") return { kind: "ignored", reason: `SMS Gateway inbox ${m.type} message` };
  return received(m.sender, m.createdAt, m.contentPreview);
}

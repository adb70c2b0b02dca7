// Webhook verification without the cryptography, shared by this package's Web Crypto verifyWebhook
// and the server's node:crypto one, so both accept and refuse exactly the same deliveries.

export const DEFAULT_TOLERANCE_MS = 300_000;

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

export interface VerifyOptions {
  /** How far the signed timestamp may be from now; default 5 minutes. */
  toleranceMs?: number;
  now?: number;
}

export type SignedHeaders =
  | { scheme: "hex"; timestampMs: string; candidates: string[] }
  | { scheme: "standard"; id: string; seconds: string; candidates: string[] };

function headerReader(headers: HeaderSource): (name: string) => string | undefined {
  if (typeof Headers !== "undefined" && headers instanceof Headers) return (name) => headers.get(name) ?? undefined;
  const lower = new Map<string, string>();
  for (const [key, value] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (value === undefined) continue;
    // A repeated header only adds signature candidates, and makes a timestamp unparseable (refused).
    lower.set(key.toLowerCase(), Array.isArray(value) ? value.join(" ") : value);
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

/** X-Webhook-* when present, else the Standard Webhooks headers; the timestamp within tolerance. */
export function readSignedHeaders(headers: HeaderSource, { toleranceMs = DEFAULT_TOLERANCE_MS, now = Date.now() }: VerifyOptions = {}): SignedHeaders {
  const get = headerReader(headers);
  const signature = get("x-webhook-signature");
  const timestamp = get("x-webhook-timestamp");
  if (signature !== undefined || timestamp !== undefined) {
    if (signature === undefined || timestamp === undefined) {
      throw new WebhookVerificationError("missing_header", "X-Webhook-Signature and X-Webhook-Timestamp are both required");
    }
    checkTolerance(parseTimestamp(timestamp, "X-Webhook-Timestamp"), now, toleranceMs);
    const candidates = [signature.trim().toLowerCase(), ...(get("x-webhook-signature-previous") ?? "").toLowerCase().split(/\s+/)];
    return { scheme: "hex", timestampMs: timestamp, candidates: candidates.filter(Boolean) };
  }
  const id = get("webhook-id");
  const seconds = get("webhook-timestamp");
  const list = get("webhook-signature");
  if (id === undefined || seconds === undefined || list === undefined) {
    throw new WebhookVerificationError("missing_header", "no X-Webhook-Signature or webhook-signature headers");
  }
  checkTolerance(parseTimestamp(seconds, "webhook-timestamp") * 1000, now, toleranceMs);
  const candidates = list.split(/\s+/).filter((e) => e.startsWith("v1,")).map((e) => e.slice(3));
  return { scheme: "standard", id, seconds, candidates };
}

// Constant time: a candidate of the wrong length (public: fixed by each scheme) is compared against
// the expected value itself, so the time never depends on where, or whether, they differ.
function safeEqual(expected: string, candidate: string): boolean {
  const sameLength = expected.length === candidate.length;
  const other = sameLength ? candidate : expected;
  let diff = 0;
  for (let i = 0; i < expected.length; i++) diff |= expected.charCodeAt(i) ^ other.charCodeAt(i);
  return diff === 0 && sameLength;
}

/** Throws bad_signature unless a candidate equals an expected signature (no early exit). */
export function checkSignatures(expected: readonly string[], candidates: readonly string[]): void {
  let found = false;
  for (const e of expected) for (const c of candidates) found = safeEqual(e, c) || found;
  if (!found) throw new WebhookVerificationError("bad_signature", "signature does not match");
}

export interface SignInput {
  secret: string;
  rawBody: string;
  /** The same value as the body's timestamp (Unix ms). */
  timestamp: number;
  deliveryId: string;
  /** Older secrets still valid during a rotation; the current secret, if listed, is skipped. */
  secrets?: readonly string[];
}

export interface WebhookPayload {
  event: string;
  data: Record<string, unknown>;
  timestamp: number;
  delivery_id: string;
}

/** Only ever called after the signature checked out. */
export function parsePayload(rawBody: string): WebhookPayload {
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

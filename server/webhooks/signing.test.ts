import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  buildTestDelivery,
  newWebhookSecret,
  signWebhook,
  verifyWebhook,
  WebhookVerificationError,
  type WebhookVerificationReason,
} from "./signing";

const NOW = 1_750_000_000_000;
const SECRET = newWebhookSecret();

function delivery(secret = SECRET, timestamp = NOW) {
  return buildTestDelivery({ secret, event: "message.received", data: { id: "msg_1", text: "hi" }, deliveryId: "dlv_1", timestamp });
}

function rejects(fn: () => unknown, reason: WebhookVerificationReason): void {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(WebhookVerificationError);
    expect((err as WebhookVerificationError).reason).toBe(reason);
    return;
  }
  throw new Error(`expected a ${reason} rejection`);
}

/** Only the Standard Webhooks headers, as a generic sender would send them. */
function standardOnly(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([k]) => k.startsWith("webhook-")));
}

describe("signWebhook", () => {
  it("mints whsec_ secrets of 32 random bytes", () => {
    expect(SECRET).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(SECRET.slice(6), "base64")).toHaveLength(32);
    expect(newWebhookSecret()).not.toBe(SECRET);
  });

  it("signs `${timestamp}.${rawBody}` in hex, keyed with the secret string (SPEC)", () => {
    const { rawBody, headers } = delivery();
    const expected = createHmac("sha256", SECRET).update(`${NOW}.${rawBody}`).digest("hex");
    expect(headers).toMatchObject({
      "Content-Type": "application/json",
      "X-Webhook-Signature": expected,
      "X-Webhook-Timestamp": String(NOW),
      "X-Webhook-Delivery-Id": "dlv_1",
      "webhook-id": "dlv_1",
      "webhook-timestamp": String(NOW / 1000),
    });
    expect(JSON.parse(rawBody)).toEqual({ event: "message.received", data: { id: "msg_1", text: "hi" }, timestamp: NOW, delivery_id: "dlv_1" });
  });

  it("signs the Standard Webhooks way: base64 HMAC of id.seconds.body with the decoded key", () => {
    const { rawBody, headers } = delivery();
    const key = Buffer.from(SECRET.slice("whsec_".length), "base64");
    const expected = createHmac("sha256", key).update(`dlv_1.${NOW / 1000}.${rawBody}`).digest("base64");
    expect(headers["webhook-signature"]).toBe(`v1,${expected}`);
  });

  it("matches the Standard Webhooks reference test vector", () => {
    const headers = signWebhook({
      secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
      rawBody: '{"test": 2432232314}',
      timestamp: 1_614_265_330_000,
      deliveryId: "msg_p5jXN8AQM9LWM0D4loKWxJek",
    });
    expect(headers["webhook-signature"]).toBe("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
  });
});

describe("verifyWebhook", () => {
  it("round-trips and returns the payload", () => {
    const { rawBody, headers } = delivery();
    expect(verifyWebhook(rawBody, headers, SECRET, { now: NOW })).toEqual({
      event: "message.received",
      data: { id: "msg_1", text: "hi" },
      timestamp: NOW,
      delivery_id: "dlv_1",
    });
  });

  it("never accepts a signature of the body alone", () => {
    const { rawBody, headers } = delivery();
    const bodyOnly = createHmac("sha256", SECRET).update(rawBody).digest("hex");
    rejects(() => verifyWebhook(rawBody, { ...headers, "X-Webhook-Signature": bodyOnly }, SECRET, { now: NOW }), "bad_signature");
  });

  it("rejects a tampered body, timestamp, signature or a wrong secret", () => {
    const { rawBody, headers } = delivery();
    const opts = { now: NOW };
    rejects(() => verifyWebhook(rawBody.replace("hi", "ho"), headers, SECRET, opts), "bad_signature");
    rejects(() => verifyWebhook(rawBody, { ...headers, "X-Webhook-Timestamp": String(NOW + 1) }, SECRET, opts), "bad_signature");
    rejects(() => verifyWebhook(rawBody, { ...headers, "X-Webhook-Signature": "00" }, SECRET, opts), "bad_signature");
    rejects(() => verifyWebhook(rawBody, headers, newWebhookSecret(), opts), "bad_signature");
    rejects(() => verifyWebhook(rawBody, { ...headers, "X-Webhook-Timestamp": "soon" }, SECRET, opts), "invalid_header");
  });

  it("applies the tolerance in both directions", () => {
    const { rawBody, headers } = delivery();
    expect(() => verifyWebhook(rawBody, headers, SECRET, { now: NOW + 300_000 })).not.toThrow();
    expect(() => verifyWebhook(rawBody, headers, SECRET, { now: NOW - 300_000 })).not.toThrow();
    rejects(() => verifyWebhook(rawBody, headers, SECRET, { now: NOW + 300_001 }), "timestamp_out_of_tolerance");
    rejects(() => verifyWebhook(rawBody, headers, SECRET, { now: NOW - 300_001 }), "timestamp_out_of_tolerance");
    expect(() => verifyWebhook(rawBody, headers, SECRET, { now: NOW + 600_000, toleranceMs: 600_000 })).not.toThrow();
    rejects(() => verifyWebhook(rawBody, standardOnly(headers), SECRET, { now: NOW - 301_000 }), "timestamp_out_of_tolerance");
  });

  it("reads header names case-insensitively, from records or Headers", () => {
    const { rawBody, headers } = delivery();
    const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
    const upper = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toUpperCase(), [v]]));
    expect(verifyWebhook(rawBody, lower, SECRET, { now: NOW }).delivery_id).toBe("dlv_1");
    expect(verifyWebhook(rawBody, upper, SECRET, { now: NOW }).delivery_id).toBe("dlv_1");
    expect(verifyWebhook(rawBody, new Headers(headers), SECRET, { now: NOW }).delivery_id).toBe("dlv_1");
  });

  it("reports missing headers and bodies that are not payloads", () => {
    const { rawBody, headers } = delivery();
    rejects(() => verifyWebhook(rawBody, {}, SECRET, { now: NOW }), "missing_header");
    rejects(() => verifyWebhook(rawBody, { "X-Webhook-Signature": headers["X-Webhook-Signature"] }, SECRET, { now: NOW }), "missing_header");
    const notPayload = buildTestDelivery({ secret: SECRET, event: "x", data: [] as never, timestamp: NOW });
    rejects(() => verifyWebhook(notPayload.rawBody, notPayload.headers, SECRET, { now: NOW }), "invalid_body");
    const headersFor = (body: string) => signWebhook({ secret: SECRET, rawBody: body, timestamp: NOW, deliveryId: "dlv_1" });
    rejects(() => verifyWebhook("not json", headersFor("not json"), SECRET, { now: NOW }), "invalid_body");
  });

  it("falls back to the Standard Webhooks headers when X-Webhook-* are absent", () => {
    const { rawBody, headers } = delivery();
    expect(verifyWebhook(rawBody, standardOnly(headers), SECRET, { now: NOW }).event).toBe("message.received");
    const tampered = { ...standardOnly(headers), "webhook-id": "dlv_2" };
    rejects(() => verifyWebhook(rawBody, tampered, SECRET, { now: NOW }), "bad_signature");
  });

  it("accepts a delivery made by an independent Standard Webhooks signer", () => {
    const secret = newWebhookSecret();
    const rawBody = JSON.stringify({ event: "reaction.added", data: { added: true }, timestamp: NOW, delivery_id: "dlv_9" });
    const key = Buffer.from(secret.split("_")[1]!, "base64");
    const sig = createHmac("sha256", key).update(`dlv_9.${NOW / 1000}.${rawBody}`).digest("base64");
    const headers = { "Webhook-Id": "dlv_9", "Webhook-Timestamp": String(NOW / 1000), "Webhook-Signature": `v2,abc v1,${sig}` };
    expect(verifyWebhook(rawBody, headers, secret, { now: NOW }).delivery_id).toBe("dlv_9");
  });
});

describe("secret rotation", () => {
  const OLD = newWebhookSecret();
  const NEW = newWebhookSecret();
  const rawBody = JSON.stringify({ event: "message.sent", data: {}, timestamp: NOW, delivery_id: "dlv_r" });
  const headers = signWebhook({ secret: NEW, secrets: [OLD, NEW], rawBody, timestamp: NOW, deliveryId: "dlv_r" });

  it("keeps one hex signature (the new secret's) and adds the old one's separately", () => {
    expect(headers["X-Webhook-Signature"]).toBe(createHmac("sha256", NEW).update(`${NOW}.${rawBody}`).digest("hex"));
    expect(headers["X-Webhook-Signature-Previous"]).toBe(createHmac("sha256", OLD).update(`${NOW}.${rawBody}`).digest("hex"));
    expect(headers["webhook-signature"]!.split(" ")).toHaveLength(2);
  });

  it("verifies with either secret during rotation, on both schemes", () => {
    for (const secret of [OLD, NEW, [OLD, NEW]]) {
      expect(verifyWebhook(rawBody, headers, secret, { now: NOW }).delivery_id).toBe("dlv_r");
      expect(verifyWebhook(rawBody, standardOnly(headers), secret, { now: NOW }).delivery_id).toBe("dlv_r");
    }
  });

  it("verifies the old secret only through its own header or v1 entry", () => {
    const withoutPrevious = { ...headers };
    delete withoutPrevious["X-Webhook-Signature-Previous"];
    rejects(() => verifyWebhook(rawBody, withoutPrevious, OLD, { now: NOW }), "bad_signature");
    expect(verifyWebhook(rawBody, withoutPrevious, NEW, { now: NOW }).event).toBe("message.sent");

    const [newEntry, oldEntry] = headers["webhook-signature"]!.split(" ");
    const onlyNew = { ...standardOnly(headers), "webhook-signature": newEntry! };
    const onlyOld = { ...standardOnly(headers), "webhook-signature": oldEntry! };
    rejects(() => verifyWebhook(rawBody, onlyNew, OLD, { now: NOW }), "bad_signature");
    expect(verifyWebhook(rawBody, onlyOld, OLD, { now: NOW }).event).toBe("message.sent");
  });
});

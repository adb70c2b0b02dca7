import { describe, expect, it } from "vitest";
import * as server from "@/server/webhooks/signing";
import { buildTestDelivery, signWebhook, verifyWebhook, WebhookVerificationError, type WebhookEvent } from "@/packages/client/src/index";

// The client's Web Crypto webhook verification agrees with the server's node:crypto signing,
// both ways, for both header schemes and during a rotation.

const secret = server.newWebhookSecret();
const rawBody = JSON.stringify({ event: "message.received", data: { object: "message", id: "msg_1", text: "hi" }, timestamp: 1_700_000_000_000, delivery_id: "dlv_1" });
const at = { now: 1_700_000_000_000 };
const sign = (s = secret, extra: Partial<server.SignInput> = {}) => server.signWebhook({ secret: s, rawBody, timestamp: at.now, deliveryId: "dlv_1", ...extra });
const reason = (p: Promise<unknown>) => p.then(() => "verified", (e: unknown) => (e instanceof WebhookVerificationError ? e.reason : String(e)));

/** Only the X-Webhook-* headers, or only the Standard Webhooks ones. */
const ours = (h: Record<string, string>) => Object.fromEntries(Object.entries(h).filter(([k]) => k.startsWith("X-")));
const standard = (h: Record<string, string>) => Object.fromEntries(Object.entries(h).filter(([k]) => k.startsWith("webhook-")));

describe("client verifyWebhook", () => {
  it("verifies the server's signatures with either scheme, as a plain record or Headers", async () => {
    const headers = sign();
    for (const h of [headers, ours(headers), standard(headers)]) {
      const event = await verifyWebhook(rawBody, h, secret, at);
      expect(event).toMatchObject({ event: "message.received", delivery_id: "dlv_1" });
    }
    const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
    await expect(verifyWebhook(rawBody, new Headers(lower), secret, at)).resolves.toMatchObject({ event: "message.received" });
  });

  it("signs exactly as the server does, and the server verifies the client's deliveries", async () => {
    const previous = server.newWebhookSecret();
    const mine = await signWebhook({ secret, rawBody, timestamp: at.now, deliveryId: "dlv_1", secrets: [previous] });
    expect(mine).toEqual(sign(secret, { secrets: [previous] }));
    const delivery = await buildTestDelivery({ secret, event: "reaction.added", data: { object: "reaction", id: "rct_1" } as never });
    expect(server.verifyWebhook(delivery.rawBody, delivery.headers, secret)).toMatchObject({ event: "reaction.added" });
    expect(server.verifyWebhook(delivery.rawBody, standard(delivery.headers), secret).delivery_id).toMatch(/^dlv_/);
  });

  it("matches the Standard Webhooks reference test vector", async () => {
    const headers = await signWebhook({
      secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
      rawBody: '{"test": 2432232314}',
      timestamp: 1_614_265_330_000,
      deliveryId: "msg_p5jXN8AQM9LWM0D4loKWxJek",
    });
    expect(headers["webhook-signature"]).toBe("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
  });

  it("accepts the old secret's signatures during a rotation, from either side", async () => {
    const next = server.newWebhookSecret();
    const headers = sign(next, { secrets: [secret] });
    // A receiver that still only knows the old secret.
    expect(await reason(verifyWebhook(rawBody, ours(headers), secret, at))).toBe("verified");
    expect(await reason(verifyWebhook(rawBody, standard(headers), secret, at))).toBe("verified");
    // One that knows both.
    expect(await reason(verifyWebhook(rawBody, headers, [next, secret], at))).toBe("verified");
  });

  it("rejects a wrong secret, a changed body, a stale or future timestamp and missing headers", async () => {
    const headers = sign();
    const other = server.newWebhookSecret();
    expect(await reason(verifyWebhook(rawBody, headers, other, at))).toBe("bad_signature");
    expect(await reason(verifyWebhook(rawBody, standard(headers), other, at))).toBe("bad_signature");
    expect(await reason(verifyWebhook(rawBody.replace("hi", "ho"), headers, secret, at))).toBe("bad_signature");
    expect(await reason(verifyWebhook(rawBody, headers, secret, { now: at.now + 300_001 }))).toBe("timestamp_out_of_tolerance");
    expect(await reason(verifyWebhook(rawBody, headers, secret, { now: at.now - 300_001 }))).toBe("timestamp_out_of_tolerance");
    expect(await reason(verifyWebhook(rawBody, headers, secret, { now: at.now + 299_000 }))).toBe("verified");
    expect(await reason(verifyWebhook(rawBody, headers, secret, { now: at.now + 20_000, toleranceMs: 10_000 }))).toBe("timestamp_out_of_tolerance");
    expect(await reason(verifyWebhook(rawBody, {}, secret, at))).toBe("missing_header");
    expect(await reason(verifyWebhook(rawBody, { "X-Webhook-Signature": headers["X-Webhook-Signature"]! }, secret, at))).toBe("missing_header");
    expect(await reason(verifyWebhook(rawBody, { ...ours(headers), "X-Webhook-Timestamp": "yesterday" }, secret, at))).toBe("invalid_header");
    expect(await reason(verifyWebhook(rawBody, { ...ours(headers), "X-Webhook-Signature": "abc" }, secret, at))).toBe("bad_signature");
  });

  it("defaults to a 5-minute tolerance against the clock", async () => {
    const fresh = await buildTestDelivery({ secret, event: "message.failed", data: { object: "outbox_item", outbox_id: "obx_1" } as never });
    expect(await reason(verifyWebhook(fresh.rawBody, fresh.headers, secret))).toBe("verified");
    const old = await buildTestDelivery({ secret, event: "message.sent", data: {} as never, timestamp: Date.now() - 6 * 60_000 });
    expect(await reason(verifyWebhook(old.rawBody, old.headers, secret))).toBe("timestamp_out_of_tolerance");
  });

  it("returns a typed event union, narrowed by event", async () => {
    const delivery = await buildTestDelivery({ secret, event: "message.failed", data: { object: "outbox_item", outbox_id: "obx_9", line_id: "ln_1", line_handle: "+1555", chat_id: "cht_1", to: "+1666", error: "boom", attempts: 3, failed_at: 1 } });
    const event: WebhookEvent = await verifyWebhook(delivery.rawBody, delivery.headers, secret);
    const summary = (e: WebhookEvent) => {
      switch (e.event) {
        case "message.received":
        case "message.sent":
          return `message ${e.data.id} ${e.data.text}`;
        case "reaction.added":
        case "reaction.removed":
          return `reaction ${e.data.type}`;
        case "message.failed":
          return `failed ${e.data.outbox_id}: ${e.data.error}`;
      }
    };
    expect(summary(event)).toBe("failed obx_9: boom");
  });
});

import { describe, expect, it } from "vitest";
import { thrown } from "../../../tests/thrown";
import { ApiError } from "../../kernel/errors";
import { mapIncoming, mapWebhook, receivedGuid, verifyWebhookSignature, webhookSignature } from "./inbound";
import { parseIsoDate } from "./schemas";

// The webhook body and X-Timestamp of the maintainer's example in discussion
// capcom6/android-sms-gateway#200 (PLATFORMS.md 2.5/2.6). The example's key is not published;
// the expected signatures below were computed independently with Python's hmac:
//   hmac.new(key.encode(), (BODY + TIMESTAMP).encode(), hashlib.sha256).hexdigest()
const BODY =
  '{"deviceId":"ffffffffceb0b1db00000193991c27e5","event":"sms:received","id":"-9qZ4oiiZZRm-h_A3mrp2","payload":{"message":"Android is always a sweet treat!","receivedAt":"2025-03-14T07:29:55.000+07:00","messageId":"69bde8d0","phoneNumber":"6505551212","simNumber":1},"webhookId":"LreFUt-Z3sSq0JufY9uWB"}';
const TIMESTAMP = "1741912196";
const VECTORS = [
  { key: "MySigningKey", signature: "85c6974ef6c34d979b5049484d37113067b818d48885d466b87f48ca86bfdc19" },
  { key: "Uu0EfFT4", signature: "54ed06bdd9f8ab4b53bd3e7118070cbd2ed4f7a41a6eb33093d02c447c353e3e" },
];
const AT = Number(TIMESTAMP) * 1000;

function request(headers: Record<string, string>, body = BODY) {
  return { headers: new Headers(headers), body: new TextEncoder().encode(body) };
}

const apiError = (fn: () => unknown) => thrown(fn, ApiError);

describe("webhook signatures", () => {
  it("matches the documented example (raw body followed by X-Timestamp, HMAC-SHA256, lowercase hex)", () => {
    for (const { key, signature } of VECTORS) {
      expect(webhookSignature(key, BODY, TIMESTAMP)).toBe(signature);
      expect(webhookSignature(key, new TextEncoder().encode(BODY), TIMESTAMP)).toBe(signature);
      expect(verifyWebhookSignature(key, request({ "x-signature": signature, "x-timestamp": TIMESTAMP }), AT + 1_000)).toBeNull();
      // Upper-case hex is the same signature.
      expect(verifyWebhookSignature(key, request({ "x-signature": signature.toUpperCase(), "x-timestamp": TIMESTAMP }), AT)).toBeNull();
    }
  });

  it("refuses a changed body, a wrong key, a missing or malformed header, and a timestamp outside ±5 minutes", () => {
    const { key, signature } = VECTORS[0]!;
    const ok = { "x-signature": signature, "x-timestamp": TIMESTAMP };
    const cases: [Record<string, string>, string, number, RegExp][] = [
      [ok, BODY.replace("sweet", "sour"), AT, /does not match/],
      [{ ...ok, "x-signature": VECTORS[1]!.signature }, BODY, AT, /does not match/],
      [{ "x-timestamp": TIMESTAMP }, BODY, AT, /lacks them/],
      [{ "x-signature": signature }, BODY, AT, /lacks them/],
      [{ ...ok, "x-signature": signature.slice(2) }, BODY, AT, /hex HMAC-SHA256/],
      [{ ...ok, "x-signature": `${signature.slice(0, 63)}g` }, BODY, AT, /hex HMAC-SHA256/],
      [{ ...ok, "x-timestamp": "1741912196.5" }, BODY, AT, /Unix time in seconds/],
      [ok, BODY, AT + 5 * 60_000 + 1_000, /5 minutes/],
      [ok, BODY, AT - 5 * 60_000 - 1_000, /5 minutes/],
    ];
    for (const [headers, body, now, message] of cases) {
      const refusal = verifyWebhookSignature(key, request(headers, body), now);
      expect(refusal).toMatchObject({ code: "invalid_webhook_signature", message: expect.stringMatching(message) });
    }
    // The signature covers the timestamp: a fresh timestamp on an old signature fails.
    const later = String(Number(TIMESTAMP) + 60);
    expect(verifyWebhookSignature(key, request({ ...ok, "x-timestamp": later }), AT)?.message).toMatch(/does not match/);
    // No key (secrets that could not be read): nothing verifies, not even an HMAC under the empty key.
    const unkeyed = { "x-signature": webhookSignature("", BODY, TIMESTAMP), "x-timestamp": TIMESTAMP };
    expect(verifyWebhookSignature("", request(unkeyed), AT)?.message).toMatch(/no webhook signing key/);
    // Within the window either way.
    expect(verifyWebhookSignature(key, request(ok), AT + 4 * 60_000)).toBeNull();
    expect(verifyWebhookSignature(key, request(ok), AT - 4 * 60_000)).toBeNull();
  });
});

describe("webhook bodies", () => {
  it("maps the documented sms:received to a message keyed on sender, receive time and text", () => {
    const [event] = mapWebhook(JSON.parse(BODY));
    // 2025-03-14T07:29:55.000+07:00 is 00:29:55 UTC.
    expect(parseIsoDate("2025-03-14T07:29:55.000+07:00")).toBe(1741912195000);
    expect(event).toEqual({
      kind: "message",
      // Python: hashlib.sha256(b"+6505551212\n1741912195000\nAndroid is always a sweet treat!").hexdigest()[:32]
      guid: "in_335dabc48ad9c1244e03dbf12b934a4c",
      sender: "6505551212",
      isFromMe: false,
      tempGuid: null,
      providerChatId: null,
      group: null,
      text: "Android is always a sweet treat!",
      attachments: [],
      isAudioMessage: false,
      replyToGuid: null,
      service: "sms",
      sentAt: 1741912195000,
    });
  });

  it("one SMS delivered again under a new event ID, or written differently, keeps its guid; another text or time does not", () => {
    const payload = { message: "hi", receivedAt: "2026-11-25T09:00:00.123+03:00", messageId: "abc", sender: "+1 (555) 010-2000", simNumber: 1 };
    const a = mapWebhook({ id: "e1", webhookId: "w", event: "sms:received", deviceId: "d", payload })[0]!;
    const b = mapWebhook({ id: "e2", webhookId: "w", event: "sms:received", deviceId: "d", payload: { ...payload, receivedAt: "2026-11-25T06:00:00.123Z", sender: "+15550102000" } })[0]!;
    const c = mapWebhook({ id: "e3", event: "sms:received", payload: { ...payload, message: "hi!" } })[0]!;
    const d = mapWebhook({ id: "e4", event: "sms:received", payload: { ...payload, receivedAt: "2026-11-25T09:00:00.124+03:00" } })[0]!;
    expect(a.kind === "message" && a.guid).toBe(b.kind === "message" && b.guid);
    expect(a.kind === "message" && a.guid).toBe(receivedGuid("+15550102000", Date.parse("2026-11-25T06:00:00.123Z"), "hi"));
    expect(new Set([a, c, d].map((e) => (e.kind === "message" ? e.guid : "")))).toHaveProperty("size", 3);
    // The inbox row of the same SMS maps to the same message.
    expect(mapIncoming({ id: "text:1", type: "SMS", sender: "+15550102000", contentPreview: "hi", createdAt: Date.parse("2026-11-25T06:00:00.123Z") })).toEqual(b);
    expect(mapIncoming({ id: "data:1", type: "DATA_SMS", sender: "+15550102000", contentPreview: "00ff", createdAt: 1 })).toMatchObject({ kind: "ignored" });
  });

  it("maps sent (with its part count), delivered and failed to delivery reports of the message ID we sent under", () => {
    const base = { messageId: "obx_01jabc", recipient: "+15550102000", phoneNumber: "+15550102000", simNumber: 1 };
    expect(mapWebhook({ id: "e", webhookId: "w", event: "sms:sent", deviceId: "d", payload: { partsCount: 3, sentAt: "2026-11-25T09:00:01.000+03:00", ...base } })).toEqual([
      { kind: "status", guid: "obx_01jabc", status: "sent", at: Date.parse("2026-11-25T06:00:01Z"), reason: null, segments: 3 },
    ]);
    // partsCount -1: the app did not record it.
    expect(mapWebhook({ event: "sms:sent", payload: { partsCount: -1, sentAt: "2026-11-25T06:00:01.000Z", ...base } })[0]).toMatchObject({ segments: null });
    expect(mapWebhook({ event: "sms:delivered", payload: { deliveredAt: "2026-11-25T06:00:02.500Z", ...base } })).toEqual([
      { kind: "status", guid: "obx_01jabc", status: "delivered", at: Date.parse("2026-11-25T06:00:02.500Z"), reason: null, segments: null },
    ]);
    expect(mapWebhook({ event: "sms:failed", payload: { failedAt: "2026-11-25T06:00:03.000Z", reason: "Send result: RESULT_ERROR_NO_SERVICE", ...base } })).toEqual([
      { kind: "status", guid: "obx_01jabc", status: "failed", at: Date.parse("2026-11-25T06:00:03Z"), reason: "Send result: RESULT_ERROR_NO_SERVICE", segments: null },
    ]);
  });

  it("ignores events we do not keep", () => {
    for (const event of ["system:ping", "sms:data-received", "mms:received", "mms:downloaded", "app:started", "sms:cancelled", "sms:brand-new"]) {
      expect(mapWebhook({ id: "e", event, payload: {} })).toEqual([{ kind: "ignored", reason: `SMS Gateway event ${event}` }]);
    }
  });

  it("refuses a body that lacks what we need with missing_required_parameter, a wrong value with invalid_parameter_value", () => {
    expect(apiError(() => mapWebhook({ id: "e", payload: {} }))).toMatchObject({ code: "missing_required_parameter", param: "event" });
    expect(apiError(() => mapWebhook({ event: "sms:received" }))).toMatchObject({ code: "missing_required_parameter", param: "payload" });
    expect(apiError(() => mapWebhook({ event: "sms:received", payload: { message: "x", sender: "+1555" } }))).toMatchObject({
      code: "missing_required_parameter",
      param: "payload.receivedAt",
      message: "SMS Gateway sms:received webhook without payload.receivedAt.",
    });
    expect(apiError(() => mapWebhook({ event: "sms:received", payload: { message: "x", receivedAt: "2026-11-25T06:00:00Z" } }))).toMatchObject({
      code: "missing_required_parameter",
      param: "payload.sender",
    });
    expect(apiError(() => mapWebhook({ event: "sms:delivered", payload: { messageId: "m", deliveredAt: "yesterday" } }))).toMatchObject({
      code: "invalid_parameter_value",
      param: "payload.deliveredAt",
    });
    expect(apiError(() => mapWebhook({ event: "sms:sent", payload: { sentAt: "2026-11-25T06:00:00Z" } }))).toMatchObject({ code: "missing_required_parameter", param: "payload.messageId" });
    expect(apiError(() => mapWebhook([1, 2]))).toMatchObject({ code: "invalid_parameter_value" });
  });
});

describe("dates", () => {
  it("reads the app's offsets and the cloud's UTC, and nothing else", () => {
    expect(parseIsoDate("2026-11-25T09:00:00.000+03:00")).toBe(Date.parse("2026-11-25T06:00:00Z"));
    expect(parseIsoDate("2026-11-25T09:00:00.000+0300")).toBe(Date.parse("2026-11-25T06:00:00Z"));
    expect(parseIsoDate("2026-11-25T06:00:00Z")).toBe(Date.parse("2026-11-25T06:00:00Z"));
    for (const bad of ["2026-11-25T06:00:00", "2026-11-25", "string", "", "2026-13-45T99:00:00Z"]) expect(parseIsoDate(bad)).toBeNull();
  });
});

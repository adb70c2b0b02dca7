import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { refusedUrl } from "../../../tests/fakes/http";
import { type FakeSmsGateway, startFakeSmsGateway } from "../../../tests/fakes/sms-gateway";
import type { ProviderLine } from "../provider";
import type { OutgoingMessage } from "../types";
import { createHttpJson, createSmsGatewayClient, describeSmsGatewayError, SmsGatewayError } from "./client";
import { smsGatewayProvider, webhookId } from "./index";
import { receivedGuid } from "./inbound";
import { smsGatewayPlatform } from "./platform";

// The adapter against the scripted local-server fake (tests/fakes/sms-gateway.ts), without
// the database: what each answer of the gateway makes of a send, the probe, the webhook
// registrations and the inbox catch-up.

let gw: FakeSmsGateway;
let n = 0;

beforeAll(async () => {
  gw = await startFakeSmsGateway({ password: "pw-secret", signingKey: "key-1", deliver: async () => 200 });
});
afterAll(async () => {
  await gw.close();
});
beforeEach(() => {
  gw.faults.failNext.length = 0;
  gw.faults.dropAfterAccept = 0;
  gw.faults.delayMs = 0;
  gw.faults.beforeAnswer = null;
});

function line(overrides: Partial<ProviderLine<{ url: string; username: string; timeoutSeconds: number }, { password: string; signingKey: string }>> = {}) {
  return {
    id: `ln_test${String(++n).padStart(22, "0")}`,
    handle: "+15550000000",
    service: "sms" as const,
    advancedFeatures: false,
    settings: { url: gw.url, username: "sms", timeoutSeconds: 2 },
    secrets: { password: "pw-secret", signingKey: "key-1" },
    inboundUrl: "https://relay.example.test/api/inbound/ln_x?token=t",
    ...overrides,
  };
}

function message(overrides: Partial<OutgoingMessage> = {}): OutgoingMessage {
  return {
    idempotencyKey: `obx_test${String(++n).padStart(22, "0")}`,
    lineHandle: "+15550000000",
    to: "+15551230000",
    isGroup: false,
    providerChatId: null,
    text: "hello",
    attachments: [],
    replyToGuid: null,
    isAudioMessage: false,
    ...overrides,
  };
}

const platform = (timeoutMs = 2_000, password = "pw-secret") =>
  smsGatewayPlatform(createSmsGatewayClient({ url: gw.url, username: "sms", password }, { timeoutMs }));

describe("sends", () => {
  it("accepted (202): sent under the outbox ID, as SMS", async () => {
    const m = message();
    expect(await platform().sendMessage(m)).toMatchObject({ ok: true, guid: m.idempotencyKey, service: "sms" });
    expect(gw.messages.get(m.idempotencyKey)).toMatchObject({ text: "hello", phoneNumbers: [m.to], withDeliveryReport: true });
  });

  it("409: adopted, with the state the gateway already holds for our recipient", async () => {
    const m = message();
    await platform().sendMessage(m);
    expect(await platform().sendMessage(m)).toEqual({ ok: true, guid: m.idempotencyKey, sentAt: gw.messages.get(m.idempotencyKey)!.states.Pending, service: "sms" });
    await gw.progress(m.idempotencyKey, "Failed", { error: "Send result: RESULT_ERROR_NO_SERVICE", emit: false });
    expect(await platform().sendMessage(m)).toMatchObject({
      ok: true,
      delivery: { status: "failed", at: gw.messages.get(m.idempotencyKey)!.states.Failed, reason: "Send result: RESULT_ERROR_NO_SERVICE" },
    });
    const d = message();
    await platform().sendMessage(d);
    await gw.progress(d.idempotencyKey, "Delivered", { emit: false });
    expect(await platform().sendMessage(d)).toMatchObject({ ok: true, delivery: { status: "delivered", at: gw.messages.get(d.idempotencyKey)!.states.Delivered, reason: null } });
    expect(gw.messages.size).toBeGreaterThanOrEqual(3);
  });

  it("maps every other answer: 400/413 permanent with the gateway's words; 401, 404, 429, 5xx wait; garbage and lost answers are unknown", async () => {
    const cases: [{ status: number; body?: unknown; headers?: Record<string, string> }, object][] = [
      [{ status: 400, body: { message: "Empty phone numbers list" } }, { permanent: true, reason: "SMS Gateway refused the message: Empty phone numbers list" }],
      [{ status: 400, body: { code: 0, message: "invalid phone number" } }, { permanent: true, reason: expect.stringContaining("invalid phone number") }],
      [{ status: 413 }, { permanent: true, reason: "SMS Gateway refused the message: HTTP 413" }],
      [{ status: 401 }, { permanent: false, unreachable: true, reason: expect.stringContaining("username or password") }],
      [{ status: 404 }, { permanent: false, unreachable: true, reason: expect.stringContaining("no SMS Gateway API at this URL") }],
      [{ status: 429 }, { permanent: false, unreachable: true, reason: expect.stringContaining("throttling") }],
      // Its Retry-After becomes the outbox's next attempt.
      [{ status: 429, headers: { "retry-after": "12" } }, { permanent: false, unreachable: true, retryAfterMs: 12_000 }],
      [{ status: 500, body: { message: "boom" } }, { permanent: false, unreachable: true, reason: "SMS Gateway answered HTTP 500: boom" }],
      [{ status: 503, body: { code: 0, message: "queue limit exceeded" } }, { permanent: false, unreachable: true, reason: expect.stringContaining("queue limit") }],
      [{ status: 502, body: "<html>Bad Gateway</html>" }, { permanent: false, unreachable: true }],
      [{ status: 202, body: { not: "a message" } }, { permanent: false, unknown: true, reason: expect.stringContaining("unexpected answer") }],
    ];
    for (const [answer, expected] of cases) {
      gw.faults.failNext.push(answer);
      const result = await platform().sendMessage(message());
      expect(result).toMatchObject({ ok: false, ...expected });
      if (!result.ok) expect(result.reason).not.toContain("pw-secret");
    }
    // A wrong password is the gateway's own 401.
    expect(await platform(2_000, "nope").sendMessage(message())).toMatchObject({ ok: false, permanent: false, unreachable: true });
  });

  it("a dropped connection or a late answer is unknown; a refused connection certainly was not sent", async () => {
    gw.faults.dropAfterAccept = 1;
    expect(await platform().sendMessage(message())).toMatchObject({ ok: false, permanent: false, unknown: true, unreachable: true });
    gw.faults.delayMs = 1_000;
    expect(await platform(200).sendMessage(message())).toMatchObject({ ok: false, unknown: true, reason: "SMS Gateway did not answer in time" });
    gw.faults.delayMs = 0;
    const down = smsGatewayPlatform(createSmsGatewayClient({ url: await refusedUrl(), username: "sms", password: "x" }));
    const result = await down.sendMessage(message());
    expect(result).toMatchObject({ ok: false, permanent: false, unreachable: true, reason: "could not reach SMS Gateway (ECONNREFUSED)" });
    expect(result.ok === false && result.unknown).toBeFalsy();
  });

  it("refuses what SMS cannot carry, without calling the gateway", async () => {
    const before = gw.requests.length;
    const file = { fileId: "file_1", filename: "a.png", mimeType: "image/png", size: 3, storageKey: "k" };
    expect(await platform().sendMessage(message({ isGroup: true, to: "grp" }))).toMatchObject({ ok: false, permanent: true, reason: expect.stringContaining("group messages") });
    expect(await platform().sendMessage(message({ attachments: [file] }))).toMatchObject({ ok: false, permanent: true, reason: expect.stringContaining("no MMS") });
    expect(await platform().sendMessage(message({ text: null }))).toMatchObject({ ok: false, permanent: true });
    const action = { idempotencyKey: "obx_r", lineHandle: "+1", to: "+2", isGroup: false, providerChatId: null };
    expect(await platform().sendReaction({ ...action, targetGuid: "g", type: "love", added: true })).toMatchObject({ ok: false, permanent: true });
    expect(await platform().sendTyping({ ...action, isTyping: true })).toMatchObject({ ok: false, permanent: true });
    expect(await platform().sendReceipt(action)).toMatchObject({ ok: false, permanent: true });
    expect(gw.requests.length).toBe(before);
  });
});

describe("probe and webhooks", () => {
  it("the probe proves the credentials and reports text-only capabilities; a wrong password fails it", async () => {
    const l = line();
    expect(await smsGatewayProvider.probe(l)).toEqual({
      ok: true,
      reason: null,
      capabilities: {
        attachments: false,
        mms: false,
        group_messages: false,
        reactions: false,
        typing: false,
        read_receipts: false,
        replies: false,
        voice_memos: false,
        delivery_reports: true,
        gateway_version: "1.60.0",
        gateway_health: "pass",
        webhooks_registered: 0,
        webhook_url_accepted: true,
      },
      advancedFeatures: false,
    });
    expect(await smsGatewayProvider.probe(line({ secrets: { password: "wrong", signingKey: "k" } }))).toMatchObject({ ok: false, reason: expect.stringContaining("username or password") });
  });

  it("registers the four events under fixed IDs of the line, replacing them when run again", async () => {
    const l = line();
    expect(await smsGatewayProvider.registerWebhooks!(l)).toEqual([]);
    expect(await smsGatewayProvider.registerWebhooks!({ ...l, inboundUrl: `${l.inboundUrl}2` })).toEqual([]);
    const ours = [...gw.webhooks.values()].filter((w) => w.id.startsWith(l.id));
    expect(ours.map((w) => w.id).sort()).toEqual(["dlvr", "fail", "recv", "sent"].map((s) => `${l.id}-${s}`));
    expect(ours.every((w) => w.url === `${l.inboundUrl}2`)).toBe(true);
    expect(webhookId(l.id, "sms:received")).toHaveLength(34);
    expect((await smsGatewayProvider.probe({ ...l, inboundUrl: `${l.inboundUrl}2` })).capabilities.webhooks_registered).toBe(4);
  });
});

describe("catch-up", () => {
  it("reads the inbox oldest first, a page at a time, as the same messages as the webhooks", async () => {
    const from = "+15559870000";
    const t0 = Date.now() - 60_000;
    for (let i = 0; i < 5; i++) await gw.receive({ from, text: `m${i}`, at: t0 + i * 1000 });
    const l = line();
    const pages = [];
    for (let offset = 0; ; offset += 2) {
      const page = await smsGatewayProvider.catchUp!(l, t0 - 1, { offset, limit: 2 });
      pages.push(page.map((e) => (e.kind === "message" ? e.text : e.kind)));
      if (page.length < 2) break;
    }
    expect(pages).toEqual([["m0", "m1"], ["m2", "m3"], ["m4"]]);
    const [first] = await smsGatewayProvider.catchUp!(l, t0 - 1, { offset: 0, limit: 1 });
    expect(first).toMatchObject({ kind: "message", guid: receivedGuid(from, t0, "m0"), sender: from, sentAt: t0, service: "sms" });
    // `after` bounds the window.
    expect((await smsGatewayProvider.catchUp!(l, t0 + 2_500, { offset: 0, limit: 10 })).map((e) => (e.kind === "message" ? e.text : ""))).toEqual(["m3", "m4"]);
  });

  it("through a relay (no inbox listing: 501), asks the phone to post the window's SMS again instead", async () => {
    const relay = await startFakeSmsGateway({ password: "pw-secret", signingKey: "key-1", relay: true, deliver: async () => 200 });
    try {
      const l = { ...line(), settings: { url: relay.url, username: "sms", timeoutSeconds: 2 } };
      // Registered first, so the phone has somewhere to post them.
      await smsGatewayProvider.registerWebhooks!(l);
      const t0 = Date.now() - 60_000;
      await relay.receive({ from: "+15559870001", text: "missed", at: t0 });
      await relay.receive({ from: "+15559870001", text: "too old", at: t0 - 3_600_000 });
      const before = relay.deliveries.length;
      expect(await smsGatewayProvider.catchUp!(l, t0 - 1, { offset: 0, limit: 10 })).toEqual([]);
      const refresh = relay.requests.find((r) => r.method === "POST" && r.path === "/inbox/refresh")!;
      expect(refresh.status).toBe(202);
      expect(refresh.body).toMatchObject({ since: new Date(t0 - 1).toISOString(), messageTypes: ["SMS"], triggerWebhooks: true });
      await vi.waitFor(() => expect(relay.deliveries.length).toBe(before + 1));
      expect(JSON.parse(relay.deliveries.at(-1)!.body)).toMatchObject({ event: "sms:received", payload: { message: "missed" } });
    } finally {
      await relay.close();
    }
  });

  it("an inbox that cannot be read is an error, not an empty catch-up", async () => {
    const failing = createSmsGatewayClient({ url: "https://gw.example", username: "u", password: "p" }, { fetch: async () => new Response("<html>oops</html>", { status: 500 }) });
    const err = await failing.inbox({ from: 0, to: 1, limit: 1, offset: 0 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SmsGatewayError);
    expect(describeSmsGatewayError(err)).toBe("SMS Gateway answered HTTP 500: <html>oops</html>");
  });
});

describe("the JSON client", () => {
  const answer = (response: () => Response) => createHttpJson({ baseUrl: "https://gw.example/3rdparty/v1/", timeoutMs: 1_000, maxBytes: 1_000, fetch: async () => response(), secrets: ["hunter22"] });
  const failure = (p: Promise<unknown>) => p.then(() => null, (e: unknown) => e as SmsGatewayError);

  it("a redirect, a body over the cap and a 2xx that is not JSON are garbage; an error page is the error's detail, secrets scrubbed", async () => {
    const request = { method: "GET" as const, path: "/webhooks" };
    expect(await failure(answer(() => new Response(null, { status: 302, headers: { location: "https://login" } })).send(request))).toMatchObject({ kind: "garbage", status: 302 });
    expect(await failure(answer(() => new Response("x".repeat(2_000), { status: 200 })).send(request))).toMatchObject({ kind: "garbage", message: expect.stringContaining("larger than 1000 bytes") });
    expect(await failure(answer(() => new Response("<html>hi</html>", { status: 200 })).send(request))).toMatchObject({ kind: "garbage" });
    const page = await answer(() => new Response("<h1>502 hunter22</h1>", { status: 502 })).send(request);
    expect(page.body).toEqual({ text: "<h1>502 ***</h1>" });
    const err = answer(() => new Response(null)).failure(request, page);
    expect(err).toMatchObject({ kind: "http", status: 502, detail: "<h1>502 ***</h1>", operation: "GET /webhooks" });
  });

  it("keeps the base URL's path, sends query and JSON, reads Retry-After", async () => {
    let seen: { url: string; init: RequestInit | undefined } | null = null;
    const client = createHttpJson({
      baseUrl: "https://gw.example/3rdparty/v1/",
      timeoutMs: 1_000,
      headers: { authorization: "Basic abc" },
      fetch: async (url, init) => {
        seen = { url: String(url), init };
        return new Response(JSON.stringify({ message: "slow down" }), { status: 429, headers: { "retry-after": "7" } });
      },
    });
    const err = await failure(client.call({ method: "POST", path: "/messages", query: { skip: true, none: undefined }, json: { a: 1 } }, [202], z.unknown()));
    expect(seen!.url).toBe("https://gw.example/3rdparty/v1/messages?skip=true");
    expect(seen!.init).toMatchObject({ method: "POST", body: '{"a":1}', headers: { accept: "application/json", authorization: "Basic abc", "content-type": "application/json" } });
    expect(err).toMatchObject({ kind: "http", status: 429, detail: "slow down", retryAfterMs: 7_000 });
  });
});

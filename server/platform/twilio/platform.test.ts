import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeTwilio, startFakeTwilio } from "../../../tests/fakes/twilio";
import type { ProviderLine } from "../provider";
import type { OutgoingMessage } from "../types";
import { listMessagesParams, type ListMessagesQuery, type TwilioClient } from "./client";
import { sendFailure, TWILIO_ERROR_CODES, TwilioError, type TwilioErrorInit } from "./errors";
import { twilioProvider } from "./index";
import { reconcileQueries, sameBody, twilioPlatform } from "./platform";
import type { TwilioMessage } from "./schemas";

// Sends, reconciliation and error policy against an in-memory Twilio client; catch-up paging
// against the scripted fake.

const HANDLE = "+15017122661";
const ALICE = "+15558675310";
const SERVICE = `MG${"2".repeat(32)}`;
const T0 = Date.UTC(2026, 10, 25, 8, 0, 0);
let seq = 0;

function listed(overrides: Partial<TwilioMessage> = {}): TwilioMessage {
  const sid = `SM${String(++seq).padStart(32, "0")}`;
  return {
    sid,
    account_sid: `AC${"1".repeat(32)}`,
    messaging_service_sid: null,
    from: HANDLE,
    to: ALICE,
    body: "hello",
    status: "queued",
    direction: "outbound-api",
    num_segments: 1,
    num_media: 0,
    error_code: null,
    error_message: null,
    date_created: T0,
    date_sent: null,
    date_updated: T0,
    uri: null,
    ...overrides,
  };
}

/** A Twilio client over a list of messages, newest first, filtered as Twilio filters. */
function memoryClient(messages: TwilioMessage[], options: { createAnswer?: TwilioMessage; createError?: TwilioError; listError?: TwilioError } = {}) {
  const calls: { op: string; params?: URLSearchParams }[] = [];
  const list = (query: ListMessagesQuery) => {
    const p = listMessagesParams(query);
    calls.push({ op: "list", params: p });
    if (options.listError) throw options.listError;
    const after = p.get("DateSent>")?.slice(0, 10);
    const rows = messages
      .filter((m) => (!p.get("To") || m.to === p.get("To")) && (!p.get("From") || m.from === p.get("From")))
      .filter((m) => !after || (m.date_sent !== null && new Date(m.date_sent).toISOString().slice(0, 10) >= after))
      .sort((a, b) => (b.date_created ?? 0) - (a.date_created ?? 0));
    return { messages: rows, next_page_uri: null, page: 0, page_size: rows.length, uri: null };
  };
  const client: TwilioClient = {
    accountSid: `AC${"1".repeat(32)}`,
    async createMessage(input) {
      calls.push({ op: "create", params: new URLSearchParams(Object.entries(input).map(([k, v]) => [k, String(v)])) });
      if (options.createError) throw options.createError;
      return options.createAnswer ?? listed({ body: input.body ?? "" });
    },
    fetchMessage: async () => null,
    listMessages: async (query) => list(query),
    nextMessagePage: async () => ({ messages: [], next_page_uri: null, page: 1, page_size: 0, uri: null }),
    listMedia: async () => [],
    mediaContentUrl: (m) => m.uri,
    downloadMedia: async () => ({ content: new Uint8Array() as never, mimeType: null }),
  };
  return { client, calls };
}

function outgoing(overrides: Partial<OutgoingMessage> = {}): OutgoingMessage {
  return { idempotencyKey: "obx_1", lineHandle: HANDLE, to: ALICE, isGroup: false, providerChatId: null, text: "hello", attachments: [], replyToGuid: null, isAudioMessage: false, ...overrides };
}

const line = { handle: HANDLE, messagingServiceSid: null, statusCallback: "https://relay.example.com/api/inbound/ln_1?token=t", sendTimeoutMs: 5_000 };
const httpError = (init: Partial<TwilioErrorInit>) => new TwilioError({ kind: "http", operation: "POST /Messages.json", message: "x", sentRequest: true, ...init });

describe("error policy", () => {
  it("names every code of PLATFORMS.md §3.6 once, with a readable reason", () => {
    const codes = TWILIO_ERROR_CODES.map((c) => c.code);
    expect(new Set(codes).size).toBe(codes.length);
    for (const code of [21211, 21614, 21635, 21612, 21610, 30005, 30006, 21408, 30007, 30004, 30034, 30032, 21602, 21617, 63016, 20003, 21606, 21608, 21659, 21660, 20429, 30001, 30003, 30008, 30022]) {
      expect(codes).toContain(code);
    }
    for (const c of TWILIO_ERROR_CODES) expect(c.reason.length).toBeGreaterThan(10);
    expect(TWILIO_ERROR_CODES.filter((c) => c.optedOut).map((c) => c.code)).toEqual([21610]);
  });

  it("refusals fail at once, throttling and credentials wait, anything that may have created a message is unknown", () => {
    expect(sendFailure(httpError({ status: 400, code: 21211 }))).toEqual({ ok: false, permanent: true, reason: expect.stringContaining("21211 the 'To' number is not a valid phone number") });
    expect(sendFailure(httpError({ status: 400, code: 21610 }))).toMatchObject({ ok: false, permanent: true, optedOut: true });
    expect(sendFailure(httpError({ status: 400, code: 21999, twilioMessage: "Something new" }))).toMatchObject({ permanent: true, reason: expect.stringContaining("21999 Something new") });
    expect(sendFailure(httpError({ status: 401, code: 20003 }))).toMatchObject({ permanent: false, unreachable: true });
    expect(sendFailure(httpError({ status: 404, code: 20404 }))).toMatchObject({ permanent: false, unreachable: true });
    const throttled = sendFailure(httpError({ status: 429, code: 20429, retryAfterMs: 2500 }));
    expect(throttled).toMatchObject({ permanent: false, unreachable: true, reason: expect.stringContaining("retry after 3 s"), retryAfterMs: 2500 });
    expect(throttled).not.toHaveProperty("unknown");
    expect(sendFailure(httpError({ status: 400, code: 30001 }))).toMatchObject({ permanent: false, unreachable: true });
    for (const err of [
      httpError({ status: 500, code: 20500 }),
      httpError({ status: 503 }),
      new TwilioError({ kind: "timeout", operation: "x", message: "x", sentRequest: true }),
      new TwilioError({ kind: "network", operation: "x", message: "x", sentRequest: true }),
      new TwilioError({ kind: "garbage", operation: "x", message: "x", sentRequest: true, status: 201 }),
      new Error("bug"),
    ]) {
      expect(sendFailure(err)).toMatchObject({ ok: false, permanent: false, unknown: true });
    }
    expect(sendFailure(new TwilioError({ kind: "network", operation: "x", message: "x", sentRequest: false, networkCode: "ECONNREFUSED" }))).toEqual({
      ok: false,
      permanent: false,
      unreachable: true,
      reason: "could not reach Twilio (ECONNREFUSED)",
    });
  });
});

describe("sending", () => {
  it("one create with the line's number or Messaging Service and its status callback; the SID and segments come back", async () => {
    const { client, calls } = memoryClient([], { createAnswer: listed({ num_segments: 3 }) });
    const result = await twilioPlatform(client, line).sendMessage(outgoing());
    expect(result).toEqual({ ok: true, guid: expect.stringMatching(/^SM/), sentAt: T0, service: "sms", segments: 3 });
    expect(Object.fromEntries(calls[0]!.params!)).toMatchObject({ to: ALICE, from: HANDLE, body: "hello", statusCallback: line.statusCallback, mediaUrls: "" });
    const service = memoryClient([]);
    await twilioPlatform(service.client, { ...line, messagingServiceSid: SERVICE }).sendMessage(outgoing());
    expect(Object.fromEntries(service.calls[0]!.params!)).toMatchObject({ messagingServiceSid: SERVICE });
    expect(service.calls[0]!.params!.has("from")).toBe(false);
  });

  it("a create already failed in its answer is sent, with that delivery report", async () => {
    const { client } = memoryClient([], { createAnswer: listed({ status: "failed", error_code: 30007, error_message: "Carrier violation", date_updated: T0 + 1 }) });
    expect(await twilioPlatform(client, line).sendMessage(outgoing())).toMatchObject({
      ok: true,
      delivery: { status: "failed", at: T0 + 1, reason: expect.stringContaining("30007 filtered by the carrier") },
    });
  });

  it("group chats, reactions, typing and receipts are refused for good without a call", async () => {
    const { client, calls } = memoryClient([]);
    const p = twilioPlatform(client, line);
    expect(await p.sendMessage(outgoing({ isGroup: true }))).toMatchObject({ ok: false, permanent: true, reason: expect.stringContaining("no group chats") });
    expect(await p.sendMessage(outgoing({ text: null }))).toMatchObject({ ok: false, permanent: true });
    const action = { idempotencyKey: "obx_2", lineHandle: HANDLE, to: ALICE, isGroup: false, providerChatId: null };
    expect(await p.sendReaction({ ...action, targetGuid: "SM1", type: "love", added: true })).toMatchObject({ ok: false, permanent: true });
    expect(await p.sendTyping({ ...action, isTyping: true })).toMatchObject({ ok: false, permanent: true });
    expect(await p.sendReceipt(action)).toMatchObject({ ok: false, permanent: true });
    expect(calls).toHaveLength(0);
  });
});

describe("reconcile", () => {
  it("adopts the oldest matching message of ours since the attempt, skipping known, older, other and inbound ones", async () => {
    const since = T0 - 5_000;
    const known = listed({ date_created: T0 });
    const ours = listed({ date_created: T0 + 1000, date_sent: T0 + 2000 });
    const messages = [
      listed({ date_created: since - 1000 }), // before the attempt
      known,
      listed({ date_created: T0, body: "hello!" }), // another text
      listed({ date_created: T0, to: "+15550000000" }), // another recipient
      listed({ date_created: T0, from: "+15017122662" }), // another sender
      listed({ date_created: T0, direction: "inbound", from: ALICE, to: HANDLE }),
      listed({ date_created: T0, num_media: 1 }), // an MMS with this text: not a text-only send
      ours,
      listed({ date_created: T0 + 3000 }), // a later copy
    ];
    const { client, calls } = memoryClient(messages);
    expect(await twilioPlatform(client, line).reconcile!(outgoing(), since, new Set([known.sid]))).toEqual({ found: true, guid: ours.sid, sentAt: T0 + 1000, service: "sms" });
    // Both listings: since the attempt's day (sent ones), and the newest page (still queued ones).
    expect(calls.map((c) => c.params!.toString())).toEqual([
      `To=%2B15558675310&From=%2B15017122661&DateSent%3E=2026-11-25T00%3A00%3A00Z&PageSize=1000`,
      `To=%2B15558675310&From=%2B15017122661&PageSize=100`,
    ]);
  });

  it("finds a queued message (no date_sent) and a trial account's prefixed text; a clean miss is found: false", async () => {
    const queued = listed({ date_created: T0, date_sent: null, body: "Sent from your Twilio trial account - hello" });
    const { client } = memoryClient([queued]);
    expect(await twilioPlatform(client, line).reconcile!(outgoing(), T0 - 5000, new Set())).toMatchObject({ found: true, guid: queued.sid });
    expect(await twilioPlatform(memoryClient([]).client, line).reconcile!(outgoing(), T0, new Set())).toEqual({ found: false });
    expect(sameBody("a  b\n", "a b")).toBe(true);
    expect(sameBody("hello", "hello there")).toBe(false);
    expect(sameBody("It\u2019s \u201Cdone\u201D \u2014 ok\u2026", `It's "done" - ok...`)).toBe(true);
    expect(sameBody(null, "Sent from your Twilio trial account - ")).toBe(true);
  });

  it("a Messaging Service's message is matched by its service, whichever number sent it; a failed listing is no answer", async () => {
    const mine = listed({ from: "+15550001111", messaging_service_sid: SERVICE, date_created: T0 });
    const other = listed({ from: "+15550002222", messaging_service_sid: `MG${"9".repeat(32)}`, date_created: T0 - 1000 });
    const { client, calls } = memoryClient([mine, other]);
    const msLine = { ...line, messagingServiceSid: SERVICE };
    expect(await twilioPlatform(client, msLine).reconcile!(outgoing(), T0 - 5000, new Set())).toMatchObject({ found: true, guid: mine.sid });
    expect(calls.every((c) => !c.params!.has("From"))).toBe(true);
    expect(reconcileQueries({ to: ALICE }, T0, msLine)).toEqual([
      { query: { to: ALICE, sentSince: T0, pageSize: 1000 }, maxPages: 20 },
      { query: { to: ALICE, pageSize: 100 }, maxPages: 1 },
    ]);

    const failing = memoryClient([], { listError: httpError({ status: 503 }) });
    expect(await twilioPlatform(failing.client, line).reconcile!(outgoing(), T0, new Set())).toMatchObject({ found: null, unreachable: true, reason: expect.stringContaining("could not ask Twilio") });
  });
});

describe("catch-up paging", () => {
  let tw: FakeTwilio;
  beforeAll(async () => {
    tw = await startFakeTwilio({ numbers: [HANDLE], deliver: async () => ({ status: 200, contentType: null, body: "" }) });
  });
  afterAll(async () => {
    await tw.close();
  });

  it("lists once per run and hands out the inbound messages oldest first, a page at a time", async () => {
    const base = Math.floor(Date.now() / 1000) * 1000;
    for (let i = 0; i < 7; i++) await tw.receive({ from: ALICE, body: `m${i}`, at: base - (7 - i) * 1000, deliver: false });
    await tw.receive({ from: ALICE, to: "+15017122699", body: "to another number", at: base, deliver: false });
    const pl: ProviderLine<ReturnType<typeof twilioProvider.load>["settings"], { authToken: string }> = {
      id: "ln_catchup",
      handle: HANDLE,
      service: "sms",
      advancedFeatures: false,
      settings: { accountSid: tw.accountSid, messagingServiceSid: null, baseUrl: tw.url, sendTimeoutSeconds: 2 },
      secrets: { authToken: tw.authToken },
      inboundUrl: "",
    };
    const pages = [];
    for (let offset = 0; ; offset += 3) {
      const page = await twilioProvider.catchUp!(pl, base - 60_000, { offset, limit: 3 });
      pages.push(page.map((e) => (e.kind === "message" ? e.text : e.kind)));
      if (page.length < 3) break;
    }
    expect(pages).toEqual([["m0", "m1", "m2"], ["m3", "m4", "m5"], ["m6"]]);
    const lists = tw.requests.filter((r) => r.method === "GET" && r.path.endsWith("/Messages.json"));
    expect(lists).toHaveLength(1);
    expect(lists[0]!.query.get("To")).toBe(HANDLE);
    expect(lists[0]!.query.get("DateSent>")).toMatch(/T00:00:00Z$/);
  });
});

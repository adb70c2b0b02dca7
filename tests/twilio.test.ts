import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, describe, expect, it, vi } from "vitest";
import { resetConfig } from "@/server/kernel/config";
import { providerLine } from "@/server/platform/connection";
import { EMPTY_TWIML } from "@/server/platform/twilio";
import { createConnectedLine, testLine } from "@/server/services/lines/line-connections";
import { catchUpLine } from "@/server/services/lines/line-monitor";
import { storage } from "@/server/storage";
import { type DeliveredAnswer, type FakeTwilio, newSid, startFakeTwilio, twilioSign } from "./fakes/twilio";
import { call, db, dispatch, get, makeAccount, phone, post, runDelivery } from "./helpers";
import { messagesOf, send, sentMessage, settled } from "./line-flows";

// Twilio lines end to end: the real service (routes, outbox runner, inbound route) against a
// scripted fake of Twilio's Messages API on a loopback port, whose signed status callbacks and
// inbound webhooks are posted to our real inbound route in-process.

runDelivery();
// The fake serves MMS media on its own origin, the line's base URL, as Twilio serves it on its own
// hosts: allowed for test doubles only (never in production), not by PROVIDER_ALLOW_PRIVATE.
process.env.PROVIDER_MEDIA_FROM_BASE_URL = "true";
resetConfig();

/** Twilio's webhooks reach our inbound route unless switched off ("this service is down"). */
let webhooksOn = true;
const dropped: { url: string; init: { body: string; headers: Record<string, string> } }[] = [];
async function deliver(url: string, init: { body: string; headers: Record<string, string> }): Promise<DeliveredAnswer> {
  if (!webhooksOn) {
    dropped.push({ url, init });
    return { status: 0, contentType: null, body: "" };
  }
  const res = await dispatch(new Request(url, { method: "POST", headers: init.headers, body: init.body }));
  return { status: res.status, contentType: res.headers.get("content-type"), body: await res.text() };
}

const fakes: FakeTwilio[] = [];
async function fake(): Promise<FakeTwilio> {
  const tw = await startFakeTwilio({ deliver, numbers: [phone(), phone()] });
  fakes.push(tw);
  return tw;
}
afterAll(async () => {
  await Promise.all(fakes.map((f) => f.close()));
});

interface TwilioFixture {
  key: string;
  accountId: string;
  line: { id: string; handle: string };
  tw: FakeTwilio;
  inboundUrl: string;
  warnings: string[];
}

/** A new account with a line connected to the fake (its first number, or its Messaging Service). */
async function twilioLine(tw: FakeTwilio, options: { messagingService?: boolean; timeout?: number; authToken?: string } = {}): Promise<TwilioFixture> {
  const f = await makeAccount();
  const report = await createConnectedLine({
    accountId: f.accountId,
    handle: options.messagingService ? phone() : tw.numbers[0]!,
    provider: "twilio",
    providerConfig: {
      accountSid: tw.accountSid,
      authToken: options.authToken ?? tw.authToken,
      baseUrl: tw.url,
      sendTimeoutSeconds: options.timeout ?? 2,
      ...(options.messagingService ? { messagingServiceSid: tw.messagingServiceSid } : {}),
    },
    sendRatePerSecond: 50,
  });
  const row = await (await db()).line.findUniqueOrThrow({ where: { id: report.line.id } });
  const inboundUrl = providerLine(row).inboundUrl;
  // The operator sets the number's "A message comes in" webhook in the console.
  tw.incomingUrl = inboundUrl;
  return { key: f.key, accountId: f.accountId, line: { id: row.id, handle: row.handle }, tw, inboundUrl, warnings: report.warnings };
}

/** A contact texts the line; its webhook reaches us. */
async function texted(f: TwilioFixture, from: string, body: string) {
  const r = await f.tw.receive({ from, body });
  expect(r.answer?.status).toBe(200);
  return r.message;
}







const fromUs = (tw: FakeTwilio, body: string) => tw.messages.filter((m) => m.direction === "outbound-api" && m.body === body);

async function hookCount(lineId: string, event: string): Promise<number> {
  return (await db()).webhookDelivery.count({ where: { event, webhook: { lineId } } });
}

/** Posts a form to the line's inbound route, signed (or not) by us. */
async function postForm(url: string, params: [string, string][], headers: Record<string, string>) {
  const res = await dispatch(new Request(url, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", ...headers }, body: new URLSearchParams(params).toString() }));
  const text = await res.text();
  return { status: res.status, contentType: res.headers.get("content-type"), text, json: res.headers.get("content-type")?.includes("json") ? JSON.parse(text) : null };
}

describe("connecting a Twilio line", () => {
  it("proves the credentials with one list call, never shows the token, and says where to point the number's webhook", async () => {
    const tw = await fake();
    const f = await twilioLine(tw);
    const line = await (await db()).line.findUniqueOrThrow({ where: { id: f.line.id } });
    expect(line).toMatchObject({ provider: "twilio", status: "connected", service: "sms", advancedFeatures: false });
    expect(line.capabilities).toMatchObject({ account_sid: tw.accountSid, sender: tw.numbers[0], messaging_service: false, attachments: true, delivery_reports: true, reactions: false });
    const probes = tw.requests.filter((r) => r.method === "GET" && r.path.endsWith("/Messages.json") && r.query.get("PageSize") === "1");
    expect(probes.length).toBeGreaterThan(0);
    expect(probes.every((r) => r.authorized)).toBe(true);
    expect(f.warnings).toEqual(
      expect.arrayContaining([
        expect.stringContaining(`"A message comes in" of phone number ${tw.numbers[0]} (Messaging Configuration) to ${f.inboundUrl} with HTTP POST`),
        expect.stringContaining("PUBLIC_URL is http://localhost:3000, not https"),
      ]),
    );
    expect(f.inboundUrl).toMatch(new RegExp(`^http://localhost:3000/api/inbound/${f.line.id}\\?token=[\\w-]{20,}$`));
    expect(line.providerSecrets).not.toContain(tw.authToken);
    const lines = await get("/v1/lines", f.key);
    expect(JSON.stringify(lines.body)).not.toContain(tw.authToken);
    const report = await testLine(f.accountId, f.line.id);
    expect(report.line.provider_settings).toEqual({ accountSid: tw.accountSid, messagingServiceSid: null, baseUrl: tw.url, sendTimeoutSeconds: 2 });
    expect(JSON.stringify(report)).not.toContain(tw.authToken);
  });

  it("a wrong auth token fails the probe with Twilio's 20003; bad settings are refused before anything is stored", async () => {
    const tw = await fake();
    const f = await makeAccount();
    const report = await createConnectedLine({
      accountId: f.accountId,
      handle: tw.numbers[1]!,
      provider: "twilio",
      providerConfig: { accountSid: tw.accountSid, authToken: "not-the-token", baseUrl: tw.url },
    });
    expect(report.probe).toMatchObject({ ok: false, reason: expect.stringContaining("20003") });
    expect(report.probe.reason).toContain("Account SID and Auth Token");
    expect(report.line.status).not.toBe("connected");

    for (const [providerConfig, message] of [
      [{ accountSid: "AC123", authToken: "x" }, "accountSid"],
      [{ accountSid: tw.accountSid, authToken: "" }, "authToken"],
      [{ accountSid: tw.accountSid, authToken: "x", messagingServiceSid: "MG1" }, "messagingServiceSid"],
      [{ accountSid: tw.accountSid, authToken: "x", baseUrl: `${tw.url}/2010-04-01` }, "baseUrl"],
      [{ accountSid: tw.accountSid, authToken: "x", extra: 1 }, "extra"],
    ] as const) {
      await expect(createConnectedLine({ accountId: f.accountId, handle: phone(), provider: "twilio", providerConfig })).rejects.toMatchObject({
        code: "invalid_parameter_value",
        param: "provider_config",
        message: expect.stringContaining(message),
      });
    }
  });
});

describe("a Twilio line connected while Twilio is unreachable", () => {
  it("still shows where to point the number's webhook: the inbound URL is ours", async () => {
    const tw = await fake();
    await tw.close(); // nothing answers at its address any more
    const f = await makeAccount();
    const report = await createConnectedLine({
      accountId: f.accountId,
      handle: tw.numbers[0]!,
      provider: "twilio",
      providerConfig: { accountSid: tw.accountSid, authToken: tw.authToken, baseUrl: tw.url, sendTimeoutSeconds: 2 },
    });
    expect(report.probe.ok).toBe(false);
    expect(report.line.status).not.toBe("connected");
    const row = await (await db()).line.findUniqueOrThrow({ where: { id: report.line.id } });
    expect(report.warnings).toEqual(expect.arrayContaining([expect.stringContaining(`to ${providerLine(row).inboundUrl} with HTTP POST`)]));
  });
});

describe("inbound through /api/inbound", () => {
  it("answers every accepted webhook with empty TwiML, stores a message once however often it arrives, and fires message.received once", async () => {
    const tw = await fake();
    const f = await twilioLine(tw);
    await post("/v1/webhooks", f.key, { from: f.line.handle, url: "https://example.com/hook", events: ["message.received"] });
    const alice = phone();
    const first = await tw.receive({ from: alice, body: "hello twilio" });
    expect(first.answer).toEqual({ status: 200, contentType: "text/xml", body: EMPTY_TWIML });
    expect(first.answer?.body).toBe('<?xml version="1.0" encoding="UTF-8"?><Response/>');
    // Twilio retries a webhook it thinks failed: the same MessageSid is taken in once.
    const again = await tw.post(f.inboundUrl, first.params);
    expect(again).toEqual({ status: 200, contentType: "text/xml", body: EMPTY_TWIML });
    const stored = await messagesOf(f, alice);
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({ guid: first.message.sid, text: "hello twilio", is_from_me: false, service: "sms", delivery_status: null });
    expect(await hookCount(f.line.id, "message.received")).toBe(1);
  });

  it("downloads an MMS attachment with the account's credentials, byte for byte", async () => {
    const tw = await fake();
    const f = await twilioLine(tw);
    const alice = phone();
    const bytes = new Uint8Array(150_000).map((_, i) => (i * 13 + 5) % 256);
    const r = await tw.receive({ from: alice, body: "a photo", media: [{ contentType: "image/jpeg", bytes }] });
    expect(r.answer?.status).toBe(200);
    const [m] = await messagesOf(f, alice);
    expect(m).toMatchObject({ guid: r.message.sid, text: "a photo" });
    expect(m!.attachments).toEqual([expect.objectContaining({ filename: `${r.message.media[0]!.sid}.jpg`, mime_type: "image/jpeg", size: bytes.length })]);
    const file = await (await db()).file.findFirstOrThrow({ where: { attachments: { some: { message: { lineId: f.line.id } } } } });
    const blob = await storage().open(file.storageKey);
    const chunks: Buffer[] = [];
    for await (const c of blob!.stream) chunks.push(c as Buffer);
    expect(Buffer.compare(Buffer.concat(chunks), Buffer.from(bytes))).toBe(0);
    // The media URL needed the credentials; the store Twilio redirected to got none (another hop).
    const media = tw.requests.filter((x) => x.path.includes("/Media/ME"));
    expect(media).toHaveLength(1);
    expect(media[0]!.authorized).toBe(true);
    expect(tw.requests.filter((x) => x.path.startsWith("/mms-cdn/"))).toHaveLength(1);
  });

  it("never fetches a media URL outside Twilio: the message is kept without it", async () => {
    const tw = await fake();
    const f = await twilioLine(tw);
    let hits = 0;
    const elsewhere = http.createServer((_req, res) => {
      hits++;
      res.end("secret");
    });
    await new Promise<void>((resolve) => elsewhere.listen(0, "127.0.0.1", resolve));
    try {
      const alice = phone();
      const r = await tw.receive({ from: alice, body: "hi", deliver: false });
      const evil = `http://127.0.0.1:${(elsewhere.address() as AddressInfo).port}/latest/meta-data`;
      const params = r.params.map(([k, v]): [string, string] => (k === "NumMedia" ? [k, "1"] : [k, v]));
      params.push(["MediaContentType0", "image/png"], ["MediaUrl0", evil]);
      expect((await tw.post(f.inboundUrl, params)).status).toBe(200);
      const [m] = await messagesOf(f, alice);
      expect(m).toMatchObject({ guid: r.message.sid, text: "hi", attachments: [] });
      expect(hits).toBe(0);
    } finally {
      elsewhere.closeAllConnections();
      await new Promise((resolve) => elsewhere.close(resolve));
    }
  });

  it("answers 403 and stores nothing for a missing, wrong or foreign signature; checks the signature against PUBLIC_URL behind a proxy", async () => {
    const tw = await fake();
    const f = await twilioLine(tw);
    const alice = phone();
    const { params, message } = await tw.receive({ from: alice, body: "signed?", deliver: false });
    const unsigned = await postForm(f.inboundUrl, params, {});
    const wrongToken = await postForm(f.inboundUrl, params, { "x-twilio-signature": twilioSign("0".repeat(32), f.inboundUrl, params) });
    const tampered = await postForm(f.inboundUrl, params.map(([k, v]): [string, string] => (k === "Body" ? [k, "changed"] : [k, v])), { "x-twilio-signature": tw.sign(f.inboundUrl, params) });
    const otherUrl = await postForm(f.inboundUrl, params, { "x-twilio-signature": tw.sign(f.inboundUrl.replace(/token=[^&]+/, "token=other"), params) });
    for (const res of [unsigned, wrongToken, tampered, otherUrl]) {
      expect(res.status).toBe(403);
      expect(res.json).toMatchObject({ error: { code: "invalid_signature", type: "authentication_error" }, request_id: expect.stringMatching(/^req_/) });
    }
    expect(await messagesOf(f, alice)).toHaveLength(0);

    // A proxy forwards Twilio's request to an internal address: the URL Twilio signed is PUBLIC_URL's.
    const internal = f.inboundUrl.replace("http://localhost:3000", "http://10.1.2.3:8080");
    const proxied = await postForm(internal, params, { "x-twilio-signature": tw.sign(f.inboundUrl, params) });
    expect(proxied).toMatchObject({ status: 200, contentType: "text/xml", text: EMPTY_TWIML });
    expect((await messagesOf(f, alice)).map((m) => m.guid)).toEqual([message.sid]);
  });

  it("refuses a correctly signed webhook without the line's token, or with another line's token (401 invalid_inbound_token)", async () => {
    const tw = await fake();
    const f = await twilioLine(tw);
    const other = await twilioLine(await fake());
    const alice = phone();
    const { params, message } = await tw.receive({ from: alice, body: "token?", deliver: false });
    const bare = f.inboundUrl.replace(/\?.*$/, "");
    const foreign = `${bare}?${new URL(other.inboundUrl).search.slice(1)}`;
    for (const url of [bare, foreign, `${bare}?token=`]) {
      // Signed exactly over the URL it is posted to: only the token is wrong.
      const res = await postForm(url, params, { "x-twilio-signature": tw.sign(url, params) });
      expect(res.status, url).toBe(401);
      expect(res.json).toMatchObject({ error: { code: "invalid_inbound_token", type: "authentication_error" }, request_id: expect.stringMatching(/^req_/) });
    }
    expect(await messagesOf(f, alice)).toHaveLength(0);
    const right = await postForm(f.inboundUrl, params, { "x-twilio-signature": tw.sign(f.inboundUrl, params) });
    expect(right.status).toBe(200);
    expect((await messagesOf(f, alice)).map((m) => m.guid)).toEqual([message.sid]);
  });

  it("answers 413 request_too_large for a form over the byte or parameter bound, signed or not, before any signature work; stores nothing", async () => {
    const tw = await fake();
    const f = await twilioLine(tw);
    const alice = phone();
    const { params } = await tw.receive({ from: alice, body: "bounded", deliver: false });
    const manyParams: [string, string][] = [...params, ...Array.from({ length: 300 }, (_, i): [string, string] => [`X${i}`, "1"])];
    const bigBody = params.map(([k, v]): [string, string] => (k === "Body" ? [k, "b".repeat(70 * 1024)] : [k, v]));
    for (const p of [manyParams, bigBody]) {
      for (const headers of [{ "x-twilio-signature": tw.sign(f.inboundUrl, p) }, {}] as Record<string, string>[]) {
        const res = await postForm(f.inboundUrl, p, headers);
        expect(res.status).toBe(413);
        expect(res.json).toMatchObject({ error: { code: "request_too_large" }, request_id: expect.stringMatching(/^req_/) });
      }
    }
    expect(await messagesOf(f, alice)).toHaveLength(0);
    // The same message within the bounds is taken in.
    expect((await postForm(f.inboundUrl, params, { "x-twilio-signature": tw.sign(f.inboundUrl, params) })).status).toBe(200);
  });

  it("refuses other content types (415), other accounts' and numbers' webhooks and unknown statuses (400), all signed", async () => {
    const tw = await fake();
    const f = await twilioLine(tw);
    const alice = phone();
    const { params } = await tw.receive({ from: alice, body: "x", deliver: false });
    const json = await dispatch(
      new Request(f.inboundUrl, { method: "POST", headers: { "content-type": "application/json", "x-twilio-signature": tw.sign(f.inboundUrl, []) }, body: JSON.stringify(Object.fromEntries(params)) }),
    );
    expect(json.status).toBe(415);
    expect((await json.json()).error.code).toBe("unsupported_media_type");

    const signed = (p: [string, string][]) => postForm(f.inboundUrl, p, { "x-twilio-signature": tw.sign(f.inboundUrl, p) });
    const swap = (name: string, value: string | null) =>
      value === null ? params.filter(([k]) => k !== name) : params.map(([k, v]): [string, string] => (k === name ? [k, value] : [k, v]));
    const otherAccount = await signed(swap("AccountSid", newSid("AC")));
    expect(otherAccount.status).toBe(400);
    expect(otherAccount.json.error).toMatchObject({ code: "invalid_parameter_value", param: "AccountSid" });
    const otherNumber = await signed(swap("To", tw.numbers[1]!));
    expect(otherNumber.json.error).toMatchObject({ code: "invalid_parameter_value", param: "To" });
    const noSid = await signed(swap("MessageSid", null));
    expect(noSid.json.error).toMatchObject({ code: "missing_required_parameter", param: "MessageSid" });
    const badStatus = await signed([...params.filter(([k]) => k !== "SmsStatus"), ["MessageStatus", "teleported"]]);
    expect(badStatus.status).toBe(400);
    expect(badStatus.json.error).toMatchObject({ code: "invalid_parameter_value", param: "MessageStatus" });
    expect(await messagesOf(f, alice)).toHaveLength(0);
  });
});

describe("sending through Twilio", () => {
  it("posts To, From, Body and StatusCallback once; the SID is the message's GUID and the segment count is kept", async () => {
    const tw = await fake();
    const f = await twilioLine(tw);
    const alice = phone();
    await texted(f, alice, "hi");
    const id = await send(f, alice, { text: "hello from twilio" });
    expect(await settled(f, id)).toMatchObject({ status: "sent" });
    const creates = tw.createRequests();
    expect(creates).toHaveLength(1);
    expect(creates[0]!.authorized).toBe(true);
    expect(Object.fromEntries(creates[0]!.form!)).toEqual({ To: alice, From: tw.numbers[0], Body: "hello from twilio", StatusCallback: f.inboundUrl });
    const m = await sentMessage(f, alice, id);
    expect(m).toMatchObject({ guid: fromUs(tw, "hello from twilio")[0]!.sid, is_from_me: true, service: "sms", delivery_status: "sent", delivered_at: null });

    // A long text goes as one message; Twilio splits it and says into how many segments.
    const long = "Long text. ".repeat(40).trim();
    const id2 = await send(f, alice, { text: long });
    expect(await settled(f, id2)).toMatchObject({ status: "sent" });
    expect(tw.createRequests()).toHaveLength(2);
    expect((await (await db()).outboxItem.findUniqueOrThrow({ where: { id: id2 } })).segments).toBe(3);
    expect((await (await db()).outboxItem.findUniqueOrThrow({ where: { id } })).segments).toBe(1);
  });

  it("sends an attachment as MMS through our signed, expiring file URL", async () => {
    const tw = await fake();
    const f = await twilioLine(tw);
    const alice = phone();
    await texted(f, alice, "send me a picture");
    const bytes = new Uint8Array([137, 80, 78, 71, 13, 10, 26, 10, 1, 2, 3]);
    const upload = await call("POST", "/v1/files", { key: f.key, raw: bytes, headers: { "content-type": "image/png", "x-filename": "dot.png" } });
    expect(upload.status).toBe(201);
    const id = await send(f, alice, { text: "here", attachments: [upload.body.id] });
    expect(await settled(f, id)).toMatchObject({ status: "sent" });
    const form = tw.createRequests()[0]!.form!;
    const media = form.getAll("MediaUrl");
    expect(media).toHaveLength(1);
    expect(media[0]).toMatch(new RegExp(`^http://localhost:3000/api/files/${upload.body.id}\\?expires=\\d+&signature=[\\w-]+$`));
    expect(Number(new URL(media[0]!).searchParams.get("expires")) * 1000).toBeGreaterThan(Date.now() + 9 * 3600_000);
    expect(form.get("Body")).toBe("here");
    // The link serves the file without a key (Twilio fetches it as is).
    const fetched = await dispatch(new Request(media[0]!));
    expect(fetched.status).toBe(200);
    expect(new Uint8Array(await fetched.arrayBuffer())).toEqual(bytes);
    const m = await sentMessage(f, alice, id);
    expect(m.guid).toMatch(/^MM[0-9a-f]{32}$/);
    expect(m.attachments).toEqual([expect.objectContaining({ filename: "dot.png", mime_type: "image/png" })]);
  });

  it("a create that timed out but reached Twilio is found by listing and adopted, never sent twice", async () => {
    const tw = await fake();
    const f = await twilioLine(tw, { timeout: 2 });
    const alice = phone();
    await texted(f, alice, "hi");
    // Still queued when we ask (no date_sent yet), then one that has left the queue.
    for (const [text, autoSendMs] of [["did it go?", null], ["and this one?", 0]] as const) {
      tw.faults.autoSendMs = autoSendMs;
      tw.faults.creates.push({ hang: "after-create", ms: 3_000 });
      const before = tw.createRequests().length;
      const id = await send(f, alice, { text });
      expect(await settled(f, id, 40_000)).toMatchObject({ status: "sent" });
      expect(tw.createRequests().length - before).toBe(1);
      expect(fromUs(tw, text)).toHaveLength(1);
      expect(await sentMessage(f, alice, id)).toMatchObject({ guid: fromUs(tw, text)[0]!.sid, text });
    }
    const lists = tw.requests.filter((r) => r.method === "GET" && r.path.endsWith("/Messages.json") && r.query.get("To") === alice);
    expect(lists.some((r) => r.query.get("From") === tw.numbers[0] && /^\d{4}-\d{2}-\d{2}T00:00:00Z$/.test(r.query.get("DateSent>") ?? ""))).toBe(true);
  }, 60_000);

  it("a create that timed out before Twilio made anything is sent again, once", async () => {
    const tw = await fake();
    const f = await twilioLine(tw, { timeout: 2 });
    const alice = phone();
    await texted(f, alice, "hi");
    tw.faults.creates.push({ hang: "before-create", ms: 3_000 });
    const id = await send(f, alice, { text: "second try" });
    expect(await settled(f, id, 40_000)).toMatchObject({ status: "sent" });
    expect(tw.createRequests()).toHaveLength(2);
    expect(fromUs(tw, "second try")).toHaveLength(1);
    expect((await sentMessage(f, alice, id)).guid).toBe(fromUs(tw, "second try")[0]!.sid);
  }, 60_000);

  it("HTTP 429 backs off and succeeds; Twilio's 5xx is reconciled before the retry", async () => {
    const tw = await fake();
    const f = await twilioLine(tw);
    const alice = phone();
    await texted(f, alice, "hi");
    tw.faults.creates.push({ status: 429, code: 20429, message: "Too Many Requests", retryAfter: 3 });
    const id = await send(f, alice, { text: "throttled" });
    // Twilio's Retry-After (3 s), not the first backoff step (0.5 s), sets the next attempt.
    const waiting = await vi.waitFor(
      async () => {
        const item = await (await db()).outboxItem.findUniqueOrThrow({ where: { id } });
        expect(item).toMatchObject({ status: "pending", attempts: 1 });
        return item;
      },
      { timeout: 10_000, interval: 20 },
    );
    expect(waiting.availableAt.getTime() - Date.now()).toBeGreaterThan(2_000);
    expect(await settled(f, id)).toMatchObject({ status: "sent" });
    expect(tw.createRequests()).toHaveLength(2);
    expect(fromUs(tw, "throttled")).toHaveLength(1);

    tw.faults.creates.push({ status: 503, code: 20500, message: "Service Unavailable" });
    const before = tw.requests.length;
    const id2 = await send(f, alice, { text: "after a 503" });
    expect(await settled(f, id2)).toMatchObject({ status: "sent" });
    expect(fromUs(tw, "after a 503")).toHaveLength(1);
    expect(tw.requests.slice(before).some((r) => r.method === "GET" && r.query.get("To") === alice)).toBe(true);
  });

  it("a refusal that will not change fails the item with Twilio's code and reason; 21610 makes later sends fail without asking Twilio", async () => {
    const tw = await fake();
    const f = await twilioLine(tw);
    await post("/v1/webhooks", f.key, { from: f.line.handle, url: "https://example.com/hook", events: ["message.failed"] });
    const alice = phone();
    await texted(f, alice, "hi");
    tw.faults.creates.push({ status: 400, code: 21211, message: `The 'To' number ${alice} is not a valid phone number.` });
    const id = await send(f, alice, { text: "to nowhere" });
    const failed = await settled(f, id);
    expect(failed).toMatchObject({ status: "failed", attempts: 1 });
    expect(failed.error).toContain("21211 the 'To' number is not a valid phone number");

    tw.optedOut.add(alice); // replied STOP while its webhook was lost
    const id2 = await send(f, alice, { text: "are you there?" });
    expect((await settled(f, id2)).error).toContain("21610");
    const creates = tw.createRequests().length;
    const id3 = await send(f, alice, { text: "still there?" });
    expect((await settled(f, id3)).error).toMatch(/opted out/);
    expect(tw.createRequests()).toHaveLength(creates);
    expect(await hookCount(f.line.id, "message.failed")).toBe(3);
  });
});

describe("delivery reports (status callbacks)", () => {
  async function sentTo(f: TwilioFixture, alice: string, text: string) {
    const id = await send(f, alice, { text });
    expect(await settled(f, id)).toMatchObject({ status: "sent" });
    return { id, sid: fromUs(f.tw, text)[0]!.sid };
  }

  it("sent then delivered (with the carrier's time), repeated: delivered once, message.delivered once, every callback answered with TwiML", async () => {
    const tw = await fake();
    const f = await twilioLine(tw);
    await post("/v1/webhooks", f.key, { from: f.line.handle, url: "https://example.com/hook", events: ["message.delivered", "message.undelivered"] });
    const alice = phone();
    await texted(f, alice, "hi");
    const { id, sid } = await sentTo(f, alice, "report me");
    for (const status of ["queued", "sending", "sent"]) expect((await tw.progress(sid, status))!.answer).toEqual({ status: 200, contentType: "text/xml", body: EMPTY_TWIML });
    expect((await sentMessage(f, alice, id)).delivery_status).toBe("sent");
    const delivered = await tw.progress(sid, "delivered", { rawDlrDoneDate: "2611251230" });
    expect(delivered!.answer.status).toBe(200);
    await tw.post(delivered!.url, delivered!.params);
    await tw.post(delivered!.url, delivered!.params);
    expect(await sentMessage(f, alice, id)).toMatchObject({ delivery_status: "delivered", delivered_at: Date.UTC(2026, 10, 25, 12, 30), delivery_error: null });
    expect(await hookCount(f.line.id, "message.delivered")).toBe(1);
  });

  it("delivered before sent stays delivered; a final state is never left; undelivered names Twilio's error", async () => {
    const tw = await fake();
    const f = await twilioLine(tw);
    const alice = phone();
    await texted(f, alice, "hi");
    const a = await sentTo(f, alice, "first");
    await tw.progress(a.sid, "delivered");
    await tw.progress(a.sid, "sent");
    await tw.progress(a.sid, "undelivered", { errorCode: 30003 });
    expect(await sentMessage(f, alice, a.id)).toMatchObject({ delivery_status: "delivered", delivered_at: expect.any(Number) });

    const b = await sentTo(f, alice, "second");
    await tw.progress(b.sid, "undelivered", { errorCode: 30003, rawDlrDoneDate: "2611251231" });
    await tw.progress(b.sid, "delivered");
    expect(await sentMessage(f, alice, b.id)).toMatchObject({
      delivery_status: "undelivered",
      delivered_at: null,
      delivery_error: "30003 unreachable destination handset (off or out of coverage)",
    });

    const c = await sentTo(f, alice, "third");
    await tw.progress(c.sid, "failed", { errorCode: 30007 });
    expect(await sentMessage(f, alice, c.id)).toMatchObject({ delivery_status: "failed", delivery_error: expect.stringContaining("30007") });
  });

  it("reports that arrive before the create's own answer are applied once the message is recorded", async () => {
    const tw = await fake();
    const f = await twilioLine(tw);
    const alice = phone();
    await texted(f, alice, "hi");
    tw.faults.reportsBeforeAnswer = ["sent", "delivered"];
    const id = await send(f, alice, { text: "fast carrier" });
    expect(await settled(f, id)).toMatchObject({ status: "sent" });
    tw.faults.reportsBeforeAnswer = [];
    expect(tw.callbacks.map((c) => c.answer.status)).toEqual([200, 200]);
    expect(await sentMessage(f, alice, id)).toMatchObject({ guid: fromUs(tw, "fast carrier")[0]!.sid, delivery_status: "delivered" });
  });

  it("a callback about another number's message is refused with 400", async () => {
    const tw = await fake();
    const f = await twilioLine(tw);
    const alice = phone();
    await texted(f, alice, "hi");
    const { id, sid } = await sentTo(f, alice, "mine");
    const params = tw.callbackParams(sid, "delivered").map(([k, v]): [string, string] => (k === "From" ? [k, tw.numbers[1]!] : [k, v]));
    const res = await postForm(f.inboundUrl, params, { "x-twilio-signature": tw.sign(f.inboundUrl, params) });
    expect(res.status).toBe(400);
    expect(res.json.error).toMatchObject({ code: "invalid_parameter_value", param: "From" });
    expect((await sentMessage(f, alice, id)).delivery_status).toBe("sent");
  });
});

describe("opt-outs, catch-up and Messaging Services", () => {
  it("after STOP a send fails at once without reaching Twilio; after START it goes out again", async () => {
    const tw = await fake();
    const f = await twilioLine(tw);
    const alice = phone();
    await texted(f, alice, "hi");
    await texted(f, alice, "  stop ");
    const creates = tw.createRequests().length;
    const id = await send(f, alice, { text: "promo" });
    const failed = await settled(f, id);
    expect(failed.status).toBe("failed");
    expect(failed.error).toMatch(/opted out.*START/);
    expect(tw.createRequests()).toHaveLength(creates);

    await texted(f, alice, "START");
    const id2 = await send(f, alice, { text: "welcome back" });
    expect(await settled(f, id2)).toMatchObject({ status: "sent" });
    expect(fromUs(tw, "welcome back")).toHaveLength(1);
  });

  it("a STOP webhook delivered again after START does not opt the contact out again", async () => {
    const tw = await fake();
    const f = await twilioLine(tw);
    const alice = phone();
    await texted(f, alice, "hi");
    webhooksOn = false;
    dropped.length = 0;
    try {
      await tw.receive({ from: alice, body: "STOP" });
    } finally {
      webhooksOn = true;
    }
    const stop = dropped[0]!;
    expect((await deliver(stop.url, stop.init)).status).toBe(200);
    await texted(f, alice, "START");
    expect((await deliver(stop.url, stop.init)).status).toBe(200);
    const id = await send(f, alice, { text: "still welcome" });
    expect(await settled(f, id)).toMatchObject({ status: "sent" });
  });

  it("messages that arrived while this service was down are caught up from Twilio's list, once each, media included", async () => {
    const tw = await fake();
    const f = await twilioLine(tw);
    const alice = phone();
    await texted(f, alice, "before");
    const picture = new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]);
    webhooksOn = false;
    dropped.length = 0;
    try {
      // Twilio's times have whole seconds: one second apart, so their order is known.
      const at = Math.ceil(Date.now() / 1000) * 1000 + 1000;
      await tw.receive({ from: alice, body: "one", at });
      await tw.receive({ from: alice, body: "two", media: [{ contentType: "image/gif", bytes: picture }], at: at + 1000 });
      await tw.receive({ from: alice, body: "three", at: at + 2000 });
    } finally {
      webhooksOn = true;
    }
    expect((await messagesOf(f, alice)).map((m) => m.text)).toEqual(["before"]);
    const report = await catchUpLine(f.line.id);
    expect(report).toMatchObject({ error: null, counts: { stored: 3 } });
    expect((await catchUpLine(f.line.id)).counts.stored).toBe(0);
    for (const d of dropped) expect((await deliver(d.url, d.init)).status).toBe(200); // late webhooks: duplicates
    const list = await messagesOf(f, alice);
    expect(list.map((m) => m.text)).toEqual(["three", "two", "one", "before"]);
    expect(list.map((m) => m.guid)).toEqual(tw.messages.filter((m) => m.direction === "inbound").map((m) => m.sid).reverse());
    expect(list[1]!.attachments).toEqual([expect.objectContaining({ mime_type: "image/gif", size: picture.length })]);
  });

  it("a Messaging Service line sends with MessagingServiceSid and takes webhooks for any of its numbers", async () => {
    const tw = await fake();
    const f = await twilioLine(tw, { messagingService: true });
    expect(f.warnings).toEqual(expect.arrayContaining([expect.stringContaining(`Messaging Service ${tw.messagingServiceSid}`)]));
    const alice = phone();
    const r = await tw.receive({ from: alice, to: tw.numbers[1]!, body: "to the pool" });
    expect(r.answer?.status).toBe(200);
    const id = await send(f, alice, { text: "from the pool" });
    expect(await settled(f, id)).toMatchObject({ status: "sent" });
    const form = tw.createRequests()[0]!.form!;
    expect(form.get("MessagingServiceSid")).toBe(tw.messagingServiceSid);
    expect(form.has("From")).toBe(false);
    const sid = fromUs(tw, "from the pool")[0]!.sid;
    await tw.progress(sid, "delivered");
    expect((await sentMessage(f, alice, id)).delivery_status).toBe("delivered");
    const foreign = tw.callbackParams(sid, "delivered").map(([k, v]): [string, string] => (k === "MessagingServiceSid" ? [k, newSid("MG")] : [k, v]));
    const res = await postForm(f.inboundUrl, foreign, { "x-twilio-signature": tw.sign(f.inboundUrl, foreign) });
    expect(res.json.error).toMatchObject({ code: "invalid_parameter_value", param: "MessagingServiceSid" });
  });
});

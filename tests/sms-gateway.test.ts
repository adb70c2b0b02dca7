import { afterAll, describe, expect, it, vi } from "vitest";
import { resetConfig } from "@/server/kernel/config";
import type { Line } from "@/server/generated/prisma/client";
import { receivedGuid } from "@/server/platform/sms-gateway/inbound";
import { connectLine, createConnectedLine, listConnections, testLine } from "@/server/services/lines/line-connections";
import { catchUpLine } from "@/server/services/lines/line-monitor";
import { type FakeSmsGateway, type FakeSmsGatewayOptions, startFakeSmsGateway, type WebhookPost } from "./fakes/sms-gateway";
import { call, db, dispatch, get, makeAccount, phone, post, runDelivery } from "./helpers";
import { messagesOf, outbox, send, sentMessage, settled } from "./line-flows";

// SMS Gateway for Android lines end to end: the real service (routes, outbox runner, inbound
// route, delivery reports) against a scripted fake of the app's local server on a loopback
// port, whose signed webhooks are posted to our real inbound route.

// The gateway only calls https:// URLs (or http://127.0.0.1): this file's lines get an https
// PUBLIC_URL; one test switches back to see the warning.
const PUBLIC_URL = "https://relay.example.test";
process.env.PUBLIC_URL = PUBLIC_URL;
resetConfig();

runDelivery();


/** Posts a webhook the way the phone does, to our in-process inbound route; answers its status. */
async function deliver(url: string, { headers, body }: WebhookPost): Promise<number> {
  return (await dispatch(new Request(url, { method: "POST", headers, body }))).status;
}

const fakes: FakeSmsGateway[] = [];
async function fake(options: FakeSmsGatewayOptions = {}): Promise<FakeSmsGateway> {
  const f = await startFakeSmsGateway({ deliver, ...options });
  fakes.push(f);
  return f;
}
afterAll(async () => {
  await Promise.all(fakes.map((f) => f.close()));
});

interface SGFixture {
  key: string;
  accountId: string;
  line: { id: string; handle: string };
  gw: FakeSmsGateway;
}

function providerConfig(gw: FakeSmsGateway, timeoutSeconds = 5) {
  return { url: gw.url, username: gw.username, password: gw.password, signingKey: gw.signingKey, timeoutSeconds };
}

/** A new account with a line connected to the fake gateway. */
async function connected(gw: FakeSmsGateway, options: { timeoutSeconds?: number } = {}): Promise<SGFixture & { warnings: string[] }> {
  const f = await makeAccount();
  const report = await createConnectedLine({
    accountId: f.accountId,
    handle: phone(),
    provider: "sms-gateway",
    providerConfig: providerConfig(gw, options.timeoutSeconds),
    sendRatePerSecond: 50,
  });
  return { key: f.key, accountId: f.accountId, line: { id: report.line.id, handle: report.line.handle }, gw, warnings: report.warnings };
}

async function subscribe(f: SGFixture, events: string[]) {
  const res = await post("/v1/webhooks", f.key, { from: f.line.handle, url: "https://example.com/hook", events });
  expect(res.status).toBe(200);
}

async function hooks(f: SGFixture, event: string): Promise<number> {
  return (await db()).webhookDelivery.count({ where: { event, webhook: { lineId: f.line.id } } });
}







async function lineRow(id: string): Promise<Line> {
  return (await db()).line.findUniqueOrThrow({ where: { id } });
}

/** A contact texts the phone (contacts write first); its webhook reaches us. */
async function texted(f: SGFixture, from: string, text = "hello") {
  const payload = await f.gw.receive({ from, text });
  expect(f.gw.deliveries.at(-1)).toMatchObject({ event: "sms:received", status: 200 });
  return payload;
}

const posts = (gw: FakeSmsGateway, id?: string) => gw.requests.filter((r) => r.method === "POST" && r.path === "/messages" && (!id || (r.body as { id?: string }).id === id));

describe("connecting an SMS Gateway line", () => {
  it("probes with the credentials, registers one webhook per event under the line's fixed IDs, and reconnecting replaces them", async () => {
    const gw = await fake({ password: "s3cret-pw-xyz", signingKey: "k3y-s1gn" });
    const f = await connected(gw);
    expect(f.warnings).toEqual([]);
    const line = await lineRow(f.line.id);
    expect(line).toMatchObject({ provider: "sms-gateway", service: "sms", status: "connected", advancedFeatures: false });
    expect(line.capabilities).toMatchObject({ attachments: false, reactions: false, typing: false, read_receipts: false, voice_memos: false, delivery_reports: true, gateway_version: "1.60.0" });
    // The probe's call proves the password: GET /webhooks with Basic auth.
    const probe = gw.requests.find((r) => r.path === "/webhooks" && r.method === "GET");
    expect(probe?.headers.authorization).toBe(`Basic ${Buffer.from(`sms:s3cret-pw-xyz`).toString("base64")}`);
    expect(probe?.status).toBe(200);

    const registered = () => [...gw.webhooks.values()].sort((a, b) => a.event.localeCompare(b.event));
    const inbound = new RegExp(`^${PUBLIC_URL}/api/inbound/${f.line.id}\\?token=[\\w-]{20,}$`);
    expect(registered().map((w) => [w.id, w.event])).toEqual([
      [`${f.line.id}-dlvr`, "sms:delivered"],
      [`${f.line.id}-fail`, "sms:failed"],
      [`${f.line.id}-recv`, "sms:received"],
      [`${f.line.id}-sent`, "sms:sent"],
    ]);
    for (const w of registered()) {
      expect(w.url).toMatch(inbound);
      expect(w.id.length).toBeLessThanOrEqual(36);
    }

    const first = registered()[0]!.url;
    const again = await connectLine(f.accountId, { line_id: f.line.id, provider: "sms-gateway", provider_config: providerConfig(gw) });
    // Probed before registering again: the four point at the previous URL (its token changed).
    expect(again.probe).toMatchObject({ ok: true, capabilities: expect.objectContaining({ webhooks_registered: 0 }) });
    expect(gw.webhooks.size).toBe(4);
    expect(registered().every((w) => w.url !== first && inbound.test(w.url))).toBe(true);
    // A probe now finds the four registrations pointing at the current URL.
    expect((await testLine(f.accountId, f.line.id)).probe.capabilities).toMatchObject({ webhooks_registered: 4, webhook_url_accepted: true });

    // Secrets are never shown.
    const lines = await get("/v1/lines", f.key);
    for (const text of [JSON.stringify(lines.body), JSON.stringify(again), JSON.stringify(line)]) {
      expect(text).not.toContain("s3cret-pw-xyz");
      expect(text).not.toContain("k3y-s1gn");
    }
    expect(again.line.provider_settings).toEqual({ url: gw.url, username: "sms", timeoutSeconds: 5 });
  });

  it("a wrong password fails the probe with a readable reason; bad settings are refused", async () => {
    const gw = await fake();
    const f = await makeAccount();
    const report = await createConnectedLine({
      accountId: f.accountId,
      handle: phone(),
      provider: "sms-gateway",
      providerConfig: { ...providerConfig(gw), password: "wrong" },
    });
    expect(report.probe).toMatchObject({ ok: false, reason: expect.stringContaining("refused the username or password") });
    expect(report.line.status).toBe("degraded");
    expect(gw.webhooks.size).toBe(0);
    await expect(
      createConnectedLine({ accountId: f.accountId, handle: phone(), provider: "sms-gateway", providerConfig: { url: gw.url, password: "x" } }),
    ).rejects.toMatchObject({ code: "invalid_parameter_value", message: expect.stringContaining("signingKey") });
    await expect(
      createConnectedLine({ accountId: f.accountId, handle: phone(), provider: "sms-gateway", providerConfig: { url: "https://api.sms-gate.app", password: "x", signingKey: "y" } }),
    ).rejects.toMatchObject({ code: "invalid_parameter_value", message: expect.stringContaining("3rdparty/v1") });
  });

  it("warns when PUBLIC_URL is neither https:// nor http://127.0.0.1, whether the gateway refuses the URL or (its insecure build) takes it", async () => {
    process.env.PUBLIC_URL = "http://localhost:3000";
    resetConfig();
    try {
      const strict = await fake();
      const a = await connected(strict);
      expect(a.warnings.join(" ")).toMatch(/neither https:\/\/ nor http:\/\/127\.0\.0\.1.*refused to register it.*url must start with https/);
      expect(strict.webhooks.size).toBe(0);
      const insecure = await fake({ insecure: true });
      const b = await connected(insecure);
      expect(b.warnings.join(" ")).toMatch(/neither https:\/\/ nor http:\/\/127\.0\.0\.1/);
      expect(insecure.webhooks.size).toBe(4);
      // The connection test shows it too.
      const test = await testLine(b.accountId, b.line.id);
      expect(test.probe).toMatchObject({ ok: true, reason: expect.stringContaining("PUBLIC_URL"), capabilities: expect.objectContaining({ webhook_url_accepted: false }) });
      expect(test.line.status).toBe("connected");
      expect(test.warnings.join(" ")).toMatch(/neither https:\/\/ nor http:\/\/127\.0\.0\.1/);
      // And the dashboard's Lines page (lines.connections) shows it with the line.
      const listed = (await listConnections(b.accountId)).find((l) => l.id === b.line.id)!;
      expect(listed.warnings.join(" ")).toMatch(/neither https:\/\/ nor http:\/\/127\.0\.0\.1/);
    } finally {
      process.env.PUBLIC_URL = PUBLIC_URL;
      resetConfig();
    }
  });
});

describe("sending through SMS Gateway", () => {
  it("sends one message under the outbox ID, long text unsplit; sms:sent records the segment count", async () => {
    const gw = await fake();
    const f = await connected(gw);
    const alice = phone();
    await texted(f, alice);
    const long = "A long text. ".repeat(40).trim();
    const id = await send(f, alice, long);
    expect(await settled(f, id)).toMatchObject({ status: "sent", error: null });
    expect(posts(gw)).toHaveLength(1);
    expect(posts(gw)[0]!.body).toEqual({ id, textMessage: { text: long }, phoneNumbers: [alice], withDeliveryReport: true });
    expect([...gw.messages.keys()]).toEqual([id]);
    expect(await sentMessage(f, alice, id)).toMatchObject({ text: long, is_from_me: true, service: "sms", delivery_status: "sent", delivered_at: null });

    await gw.progress(id, "Sent", { partsCount: 4 });
    expect(gw.deliveries.at(-1)).toMatchObject({ event: "sms:sent", status: 200 });
    expect((await outbox(f, id)).segments).toBe(4);
    expect((await sentMessage(f, alice, id)).delivery_status).toBe("sent");

    // Attachments are refused before anything is queued: the line's capabilities say text only.
    const upload = await call("POST", "/v1/files", { key: f.key, raw: new Uint8Array([1, 2, 3]), headers: { "content-type": "image/png", "x-filename": "a.png" } });
    const refused = await post("/v1/messages", f.key, { from: f.line.handle, to: alice, text: "pic", attachments: [upload.body.id] });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ code: "invalid_parameter_value", param: "attachments" });
  });

  it("a send whose answer was lost is sent again under the same ID, gets 409, and ends sent once", async () => {
    const gw = await fake();
    const f = await connected(gw);
    const alice = phone();
    await texted(f, alice);
    gw.faults.dropAfterAccept = 1;
    const id = await send(f, alice, "did it go?");
    expect(await settled(f, id)).toMatchObject({ status: "sent" });
    expect(posts(gw, id).map((r) => r.status)).toEqual([0, 409]);
    expect(gw.requests.filter((r) => r.method === "GET" && r.path === `/messages/${id}`)).toHaveLength(1);
    expect(gw.messages.size).toBe(1);
    const mine = (await messagesOf(f, alice)).filter((m) => m.is_from_me);
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ guid: id, delivery_status: "sent" });
  });

  it("an answer slower than the timeout is the same: resent, 409, adopted", async () => {
    const gw = await fake();
    const f = await connected(gw, { timeoutSeconds: 1 });
    const alice = phone();
    await texted(f, alice);
    gw.faults.delayMs = 2_500;
    const id = await send(f, alice, "slow");
    await vi.waitFor(() => expect(posts(gw, id).length).toBeGreaterThanOrEqual(2), { timeout: 20_000, interval: 100 });
    gw.faults.delayMs = 0;
    expect(await settled(f, id)).toMatchObject({ status: "sent" });
    expect(posts(gw, id).slice(1).every((r) => r.status === 409)).toBe(true);
    expect(gw.messages.size).toBe(1);
    expect((await messagesOf(f, alice)).filter((m) => m.is_from_me)).toHaveLength(1);
  }, 40_000);

  it("a message the gateway already delivered (its webhooks lost) is adopted with its final state", async () => {
    const gw = await fake();
    const f = await connected(gw);
    await subscribe(f, ["message.delivered"]);
    const alice = phone();
    await texted(f, alice);
    gw.faults.dropAfterAccept = 1;
    gw.faults.webhooksOff = true; // the phone is off the network: only the 409's read-back tells
    gw.faults.beforeAnswer = async (m) => {
      gw.faults.beforeAnswer = null;
      await gw.progress(m.id, "Sent", { partsCount: 1 });
      await gw.progress(m.id, "Delivered");
    };
    const id = await send(f, alice, "delivered while we were not looking");
    expect(await settled(f, id)).toMatchObject({ status: "sent" });
    gw.faults.webhooksOff = false;
    expect(posts(gw, id).map((r) => r.status)).toEqual([0, 409]);
    const m = await sentMessage(f, alice, id);
    expect(m).toMatchObject({ delivery_status: "delivered", delivered_at: gw.messages.get(id)!.states.Delivered });
    expect(await hooks(f, "message.delivered")).toBe(1);
  });

  it("429 and 503 wait and retry; a 400 fails the item at once with the gateway's reason and message.failed", async () => {
    const gw = await fake();
    const f = await connected(gw);
    await subscribe(f, ["message.failed"]);
    const alice = phone();
    await texted(f, alice);
    gw.faults.failNext.push({ status: 429, body: { message: "Too Many Requests" } }, { status: 503, body: { code: 0, message: "queue limit exceeded" } });
    const id = await send(f, alice, "eventually");
    expect(await settled(f, id)).toMatchObject({ status: "sent" });
    expect(posts(gw, id).map((r) => r.status)).toEqual([429, 503, 202]);
    expect((await lineRow(f.line.id)).status).toBe("connected");

    gw.faults.failNext.push({ status: 400, body: { message: "invalid phone number: +1555000" } });
    const bad = await send(f, alice, "never");
    expect(await settled(f, bad)).toMatchObject({ status: "failed", error: "SMS Gateway refused the message: invalid phone number: +1555000" });
    expect(posts(gw, bad)).toHaveLength(1);
    await vi.waitFor(async () => expect(await hooks(f, "message.failed")).toBe(1));
    const failed = await (await db()).webhookDelivery.findFirstOrThrow({ where: { event: "message.failed", webhook: { lineId: f.line.id } } });
    expect(failed.payload).toMatchObject({ outbox_id: bad, error: expect.stringContaining("invalid phone number") });
  });
});

describe("delivery reports", () => {
  it("sent, delivered, failed in any order, repeated, or before the send's answer: the first final state stands, announced once", async () => {
    const gw = await fake();
    const f = await connected(gw);
    await subscribe(f, ["message.delivered", "message.undelivered"]);
    const alice = phone();
    await texted(f, alice);

    // In order, the phone's own timestamps kept.
    const inOrder = await send(f, alice, "one");
    await settled(f, inOrder);
    await gw.progress(inOrder, "Sent", { partsCount: 1 });
    await gw.progress(inOrder, "Delivered");
    const a = await sentMessage(f, alice, inOrder);
    expect(a).toMatchObject({ delivery_status: "delivered", delivered_at: gw.messages.get(inOrder)!.states.Delivered, delivery_error: null });

    // Delivered before sent, and each repeated (the phone's retries carry new event IDs).
    const reversed = await send(f, alice, "two");
    await settled(f, reversed);
    await gw.progress(reversed, "Delivered");
    const delivered = gw.deliveries.at(-1)!;
    await gw.progress(reversed, "Sent", { partsCount: 2 });
    const sentAgain = await gw.emit("sms:sent", JSON.parse(gw.deliveries.at(-1)!.body).payload);
    const deliveredAgain = await gw.emit("sms:delivered", JSON.parse(delivered.body).payload);
    expect([...sentAgain, ...deliveredAgain].every((d) => d.status === 200 && d.envelopeId !== delivered.envelopeId)).toBe(true);
    expect(await sentMessage(f, alice, reversed)).toMatchObject({ delivery_status: "delivered", delivered_at: gw.messages.get(reversed)!.states.Delivered });
    expect((await outbox(f, reversed)).segments).toBe(2);

    // Failed, then a late delivered: still failed, with the phone's reason.
    const failing = await send(f, alice, "three");
    await settled(f, failing);
    await gw.progress(failing, "Failed", { error: "Send result: RESULT_ERROR_NO_SERVICE" });
    await gw.progress(failing, "Delivered");
    expect(await sentMessage(f, alice, failing)).toMatchObject({ delivery_status: "failed", delivered_at: null, delivery_error: "Send result: RESULT_ERROR_NO_SERVICE" });

    // Reports that arrive before the send's own 202 are applied when it is recorded.
    gw.faults.beforeAnswer = async (m) => {
      gw.faults.beforeAnswer = null;
      await gw.progress(m.id, "Sent", { partsCount: 3 });
      await gw.progress(m.id, "Delivered");
    };
    const early = await send(f, alice, "four");
    expect(await settled(f, early)).toMatchObject({ status: "sent" });
    // The segment count came before the message was recorded: the outbox item still gets it.
    expect((await outbox(f, early)).segments).toBe(3);
    expect(await sentMessage(f, alice, early)).toMatchObject({ delivery_status: "delivered", delivered_at: gw.messages.get(early)!.states.Delivered });

    await vi.waitFor(async () => {
      expect(await hooks(f, "message.delivered")).toBe(3);
      expect(await hooks(f, "message.undelivered")).toBe(1);
    });
    const events = await (await db()).webhookDelivery.findMany({ where: { event: { in: ["message.delivered", "message.undelivered"] }, webhook: { lineId: f.line.id } } });
    expect(events.map((e) => (e.payload as { guid: string }).guid).sort()).toEqual([inOrder, reversed, failing, early].sort());
  });
});

describe("inbound through /api/inbound", () => {
  it("an SMS delivered twice under new event IDs is stored once and announced once", async () => {
    const gw = await fake();
    const f = await connected(gw);
    await subscribe(f, ["message.received"]);
    const alice = phone();
    const payload = await texted(f, alice, "first!");
    const again = await gw.emit("sms:received", payload);
    expect(again).toHaveLength(1);
    expect(again[0]!.status).toBe(200);
    expect(again[0]!.envelopeId).not.toBe(gw.deliveries.at(-2)!.envelopeId);
    const stored = await messagesOf(f, alice);
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({ text: "first!", is_from_me: false, service: "sms", sender: alice, guid: receivedGuid(alice, stored[0]!.sent_at, "first!") });
    await vi.waitFor(async () => expect(await hooks(f, "message.received")).toBe(1));
    // Events we do not keep (we never register them, but a user may) are answered 200 and ignored.
    const url = new URL(gw.webhooks.get(`${f.line.id}-recv`)!.url);
    const ping = JSON.stringify({ id: "p1", webhookId: "theirs", event: "system:ping", deviceId: gw.deviceId, payload: { health: { status: "pass" } } });
    const res = await call("POST", url.pathname + url.search, { raw: ping, headers: gw.sign(ping) });
    expect(res).toMatchObject({ status: 200, body: { received: { stored: 0, ignored: 1 } } });
  });

  it("answers 401 to a bad, missing or stale signature and stores nothing; 413 to a body over the limit; 400 to a payload without its fields", async () => {
    const gw = await fake();
    const f = await connected(gw);
    const url = gw.webhooks.get(`${f.line.id}-recv`)!.url;
    const path = new URL(url).pathname + new URL(url).search;
    const body = JSON.stringify({ id: "e1", webhookId: `${f.line.id}-recv`, event: "sms:received", deviceId: gw.deviceId, payload: { message: "sneaky", receivedAt: gw.date(Date.now()), messageId: "1", sender: phone(), phoneNumber: "x" } });
    const cases: Record<string, string>[] = [
      gw.sign(body, { key: "not-the-key" }),
      gw.sign(body, { skewSeconds: -6 * 60 }),
      gw.sign(body, { skewSeconds: 6 * 60 }),
      { "content-type": "application/json" },
      { ...gw.sign(body), "x-signature": "00".repeat(32) },
    ];
    for (const headers of cases) {
      const res = await call("POST", path, { raw: body, headers });
      expect(res.status).toBe(401);
      expect(res.body).toMatchObject({ error: { code: "invalid_webhook_signature", type: "authentication_error" }, request_id: expect.stringMatching(/^req_/) });
    }
    // A signature over another body does not carry over.
    const tampered = await call("POST", path, { raw: body.replace("sneaky", "sneakier"), headers: gw.sign(body) });
    expect(tampered.status).toBe(401);
    expect(await (await db()).message.count({ where: { lineId: f.line.id } })).toBe(0);

    const huge = JSON.stringify({ event: "sms:received", payload: { message: "x".repeat(1024 * 1024 + 10) } });
    const tooLarge = await call("POST", path, { raw: huge, headers: gw.sign(huge) });
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.body.error.code).toBe("request_too_large");

    const partial = JSON.stringify({ id: "e2", event: "sms:received", payload: { message: "no time", sender: phone() } });
    const missing = await call("POST", path, { raw: partial, headers: gw.sign(partial) });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toMatchObject({ code: "missing_required_parameter", param: "payload.receivedAt" });
    expect(await (await db()).message.count({ where: { lineId: f.line.id } })).toBe(0);

    // The same body signed right is taken in.
    const ok = await call("POST", path, { raw: body, headers: gw.sign(body) });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ object: "inbound_receipt", received: { stored: 1 } });
  });

  it("refuses a correctly signed webhook without the line's token, or with another line's token (401 invalid_inbound_token)", async () => {
    const gw = await fake();
    const f = await connected(gw);
    const other = await connected(gw);
    const url = new URL(gw.webhooks.get(`${f.line.id}-recv`)!.url);
    const otherToken = new URL(gw.webhooks.get(`${other.line.id}-recv`)!.url).searchParams.get("token")!;
    const alice = phone();
    const body = JSON.stringify({ id: "t1", webhookId: `${f.line.id}-recv`, event: "sms:received", deviceId: gw.deviceId, payload: { message: "token?", receivedAt: gw.date(Date.now()), messageId: "1", sender: alice, phoneNumber: alice } });
    for (const path of [url.pathname, `${url.pathname}?token=${otherToken}`, `${url.pathname}?token=`]) {
      const res = await call("POST", path, { raw: body, headers: gw.sign(body) });
      expect(res.status, path).toBe(401);
      expect(res.body).toMatchObject({ error: { code: "invalid_inbound_token", type: "authentication_error" }, request_id: expect.stringMatching(/^req_/) });
    }
    expect(await (await db()).message.count({ where: { lineId: f.line.id } })).toBe(0);
    const ok = await call("POST", url.pathname + url.search, { raw: body, headers: gw.sign(body) });
    expect(ok).toMatchObject({ status: 200, body: { received: { stored: 1 } } });
    expect((await messagesOf(f, alice)).map((m) => m.text)).toEqual(["token?"]);
  });

  it("SMS received while webhooks were lost are caught up from the phone's inbox, once each, as the same messages", async () => {
    const gw = await fake();
    const f = await connected(gw);
    await subscribe(f, ["message.received"]);
    const alice = phone();
    await texted(f, alice, "before");
    gw.faults.webhooksOff = true;
    const start = Date.now();
    for (const [i, t] of ["one", "two", "three"].entries()) await gw.receive({ from: alice, text: t, at: start + i + 1 });
    gw.faults.webhooksOff = false;
    await new Promise((r) => setTimeout(r, 20));
    expect((await messagesOf(f, alice)).map((m) => m.text)).toEqual(["before"]);

    const report = await catchUpLine(f.line.id);
    expect(report).toMatchObject({ error: null, counts: { stored: 3, duplicate: 1 } });
    expect((await catchUpLine(f.line.id)).counts.stored).toBe(0);
    // The phone's own retries arrive late: duplicates of what catch-up stored.
    for (const { event, payload } of gw.undelivered.splice(0)) await gw.emit(event, payload);
    expect(gw.deliveries.slice(-3).every((d) => d.status === 200)).toBe(true);
    expect((await messagesOf(f, alice)).map((m) => m.text)).toEqual(["three", "two", "one", "before"]);
    await vi.waitFor(async () => expect(await hooks(f, "message.received")).toBe(4));
    const inboxReads = gw.requests.filter((r) => r.path === "/inbox");
    expect(inboxReads.every((r) => r.query.get("type") === "SMS" && r.status === 200)).toBe(true);
  });

  it("through the cloud or a private relay (no inbox listing), catch-up has the phone post the missed SMS again: stored once each", async () => {
    const gw = await fake({ relay: true });
    const f = await connected(gw);
    await subscribe(f, ["message.received"]);
    const alice = phone();
    await texted(f, alice, "before");
    gw.faults.webhooksOff = true;
    const start = Date.now();
    for (const [i, t] of ["one", "two"].entries()) await gw.receive({ from: alice, text: t, at: start + i + 1 });
    gw.faults.webhooksOff = false;
    expect((await messagesOf(f, alice)).map((m) => m.text)).toEqual(["before"]);

    expect(await catchUpLine(f.line.id)).toMatchObject({ error: null });
    expect(gw.requests.filter((r) => r.path === "/inbox/refresh").map((r) => `${r.method} ${r.status}`).at(-1)).toBe("POST 202");
    await vi.waitFor(async () => expect((await messagesOf(f, alice)).map((m) => m.text)).toEqual(["two", "one", "before"]));
    // The phone's own retries still come: duplicates, stored and announced once.
    for (const { event, payload } of gw.undelivered.splice(0)) await gw.emit(event, payload);
    expect((await messagesOf(f, alice)).map((m) => m.text)).toEqual(["two", "one", "before"]);
    await vi.waitFor(async () => expect(await hooks(f, "message.received")).toBe(3));
    expect((await (await db()).line.findUniqueOrThrow({ where: { id: f.line.id } })).status).toBe("connected");
  });
});

import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it, vi } from "vitest";
import type { Line } from "@/server/generated/prisma/client";
import { createConnectedLine, testLine } from "@/server/services/lines/line-connections";
import { catchUpLine, probeDueLines } from "@/server/services/lines/line-monitor";
import { forgetCachedLines } from "@/server/services/lines/lines";
import { storage } from "@/server/storage";
import { type FakeBlueBubbles, startFakeBlueBubbles } from "./fakes/bluebubbles";
import { blueBubblesLine, call, db, dispatch, get, gql, makeAccount, phone, post, runDelivery } from "./helpers";
import { messagesOf, outbox, send, settled } from "./line-flows";

// BlueBubbles lines end to end: the real service (routes, outbox runner, inbound route) against
// a scripted fake of BlueBubbles Server 1.9.9 on a loopback port, whose webhooks are delivered
// to our real inbound route.

runDelivery();

/** Webhooks from the fakes reach our inbound route unless switched off ("the service is down"). */
let webhooksOn = true;
const dropped: { url: string; body: unknown }[] = [];
async function deliver(url: string, body: { type: string; data: unknown }): Promise<void> {
  if (!webhooksOn) {
    dropped.push({ url, body });
    return;
  }
  await dispatch(new Request(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }));
}

const fakes: FakeBlueBubbles[] = [];
async function fake(options: Parameters<typeof startFakeBlueBubbles>[0] = {}): Promise<FakeBlueBubbles> {
  const f = await startFakeBlueBubbles({ deliver, ...options });
  fakes.push(f);
  return f;
}
afterAll(async () => {
  await Promise.all(fakes.map((f) => f.close()));
});

interface BBFixture {
  key: string;
  accountId: string;
  line: { id: string; handle: string };
  bb: FakeBlueBubbles;
}

async function connected(
  bb: FakeBlueBubbles,
  options: { service?: "imessage" | "sms" | "auto"; rate?: number; timeout?: number } = {},
): Promise<BBFixture> {
  const f = await blueBubblesLine(bb, options);
  return { key: f.key, accountId: f.accountId, line: f.line, bb };
}

/** A contact texts the Mac; its webhook reaches us. */
async function texted(f: BBFixture, from: string, text: string) {
  const m = f.bb.receive({ from, text });
  await f.bb.idle();
  return m;
}





async function lineRow(id: string): Promise<Line> {
  return (await db()).line.findUniqueOrThrow({ where: { id } });
}

const fromUs = (bb: FakeBlueBubbles, text: string) => bb.messages.filter((m) => m.isFromMe && m.text === text);

describe("connecting a BlueBubbles line", () => {
  it("probes capabilities, registers its inbound webhook (replacing its own earlier one) and never shows the password", async () => {
    const bb = await fake({ password: "s3cret-pw-xyz" });
    const f = await connected(bb);
    const line = await lineRow(f.line.id);
    expect(line).toMatchObject({ provider: "bluebubbles", status: "connected", advancedFeatures: true });
    expect(line.capabilities).toMatchObject({ private_api: true, helper_connected: true, reactions: true, server_version: "1.9.9" });
    expect(bb.webhooks).toHaveLength(1);
    expect(bb.webhooks[0]!.url).toMatch(new RegExp(`^http://localhost:3000/api/inbound/${f.line.id}\\?token=[\\w-]{20,}$`));
    expect(bb.webhooks[0]!.events).toEqual(["new-message", "updated-message", "typing-indicator", "chat-read-status-changed", "message-send-error"]);
    expect(line.providerSecrets).not.toContain("s3cret-pw-xyz");

    // Reconnecting replaces the registration (BlueBubbles would keep the first one of a URL unchanged).
    const first = bb.webhooks[0]!.url;
    await createConnectedLine; // (same module; reconnect through the service)
    const { connectLine } = await import("@/server/services/lines/line-connections");
    const again = await connectLine(f.accountId, { line_id: f.line.id, provider: "bluebubbles", provider_config: { url: bb.url, password: bb.password } });
    expect(again.probe.ok).toBe(true);
    expect(bb.webhooks).toHaveLength(1);
    expect(bb.webhooks[0]!.url).not.toBe(first);

    const lines = await get("/v1/lines", f.key);
    expect(JSON.stringify(lines.body)).not.toContain("s3cret-pw-xyz");
    expect(JSON.stringify(again)).not.toContain("s3cret-pw-xyz");
    expect(lines.body.data.find((l: { id: string }) => l.id === f.line.id)).toMatchObject({
      provider: "bluebubbles",
      status: "connected",
      status_reason: null,
      advanced_features: true,
      last_event_at: expect.any(Number),
    });
    expect(again.line.provider_settings).toEqual({ url: bb.url, sendTimeoutSeconds: 150 });
  });

  it("a line without the Private API reports basic capabilities, and advanced sends are refused", async () => {
    const bb = await fake({ privateApi: false });
    const f = await connected(bb);
    const report = await testLine(f.accountId, f.line.id);
    expect(report.probe).toMatchObject({ ok: true, advancedFeatures: false, reason: expect.stringContaining("Private API is off") });
    expect(report.line).toMatchObject({ advanced_features: false, status: "connected" });
    const alice = phone();
    await texted(f, alice, "hello");
    const [m] = await messagesOf(f, alice);
    const res = await post("/v1/reactions", f.key, { from: f.line.handle, to: alice, message_id: m!.id, type: "love" });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe("advanced_features_required");

    bb.setPrivateApi(true);
    expect((await testLine(f.accountId, f.line.id)).line.advanced_features).toBe(true);
    bb.setHelperConnected(false);
    const lost = await testLine(f.accountId, f.line.id);
    expect(lost.line).toMatchObject({ advanced_features: false, status: "degraded", status_reason: expect.stringContaining("helper is not connected") });
  });

  it("refuses bad settings with the documented error, leaving nothing behind", async () => {
    const f = await makeAccount();
    const { connectLine } = await import("@/server/services/lines/line-connections");
    await expect(connectLine(f.accountId, { line_id: f.line.id, provider: "bluebubbles", provider_config: { url: "mac.local", password: "x" } })).rejects.toMatchObject({
      code: "invalid_parameter_value",
      param: "provider_config",
    });
    await expect(
      createConnectedLine({ accountId: f.accountId, handle: phone(), provider: "bluebubbles", providerConfig: { url: "http://mac.local:1234" } }),
    ).rejects.toMatchObject({ code: "invalid_parameter_value", message: expect.stringContaining("password") });
    expect((await lineRow(f.line.id)).provider).toBe("simulated");
  });
});

describe("inbound through /api/inbound", () => {
  it("stores a message once however often its webhook arrives, keeps the chat's GUID, and fires message.received once", async () => {
    const bb = await fake();
    const f = await connected(bb);
    await post("/v1/webhooks", f.key, { from: f.line.handle, url: "https://example.com/hook", events: ["message.received"] });
    const alice = phone();
    const m = await texted(f, alice, "first!");
    await bb.emit("new-message", bb.emitted.find((e) => e.type === "new-message")!.data); // delivered twice
    await deliver(bb.webhooks[0]!.url, { type: "new-message", data: bb.emitted.find((e) => e.type === "new-message")!.data });
    const stored = await messagesOf(f, alice);
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({ guid: m.guid, text: "first!", is_from_me: false, service: "imessage" });
    const chat = await (await db()).chat.findFirstOrThrow({ where: { lineId: f.line.id, identifier: alice } });
    expect(chat.providerChatId).toBe(`iMessage;-;${alice}`);
    const hooks = await (await db()).webhookDelivery.count({ where: { event: "message.received", webhook: { lineId: f.line.id } } });
    expect(hooks).toBe(1);
  });

  it("concurrent deliveries, a fifth of them repeats, are stored once each and announced once each", async () => {
    const bb = await fake();
    const f = await connected(bb);
    await post("/v1/webhooks", f.key, { from: f.line.handle, url: "https://example.com/hook", events: ["message.received"] });
    webhooksOn = false; // delivered by hand below, all at once
    dropped.length = 0;
    const senders = Array.from({ length: 8 }, () => phone());
    try {
      for (let i = 0; i < 60; i++) bb.receive({ from: senders[i % senders.length]!, text: `burst ${i}` });
      await bb.idle();
    } finally {
      webhooksOn = true;
    }
    const posts = dropped.filter((d) => (d.body as { type: string }).type === "new-message");
    expect(posts).toHaveLength(60);
    const all = [...posts, ...posts.filter((_, i) => i % 5 === 0), ...posts.filter((_, i) => i % 5 === 0)];
    const answers = await Promise.all(all.map((d) => call("POST", new URL(d.url).pathname + new URL(d.url).search, { body: d.body })));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    const received = answers.reduce((n, a) => n + (a.body.received.stored as number), 0);
    expect(received).toBe(60);
    const rows = await (await db()).message.findMany({ where: { lineId: f.line.id }, select: { guid: true, chatId: true } });
    expect(rows).toHaveLength(60);
    expect(new Set(rows.map((r) => r.guid)).size).toBe(60);
    expect(new Set(rows.map((r) => r.chatId)).size).toBe(8);
    const hooks = await (await db()).webhookDelivery.count({ where: { event: "message.received", webhook: { lineId: f.line.id } } });
    expect(hooks).toBe(60);
    const chats = await (await db()).chat.findMany({ where: { lineId: f.line.id } });
    expect(chats.every((c) => c.hasReceivedInbound && c.providerChatId?.startsWith("iMessage;-;"))).toBe(true);
    // Contact-first is satisfied: the line can answer any of them.
    expect((await post("/v1/messages", f.key, { from: f.line.handle, to: senders[3], text: "thanks" })).status).toBe(200);
  });

  it("answers 401 and stores nothing without the line's token", async () => {
    const bb = await fake();
    const f = await connected(bb);
    const body = { type: "new-message", data: { ...bb.receive({ from: phone(), text: "x", emit: false }) } };
    const url = new URL(bb.webhooks[0]!.url);
    for (const path of [`/api/inbound/${f.line.id}`, `/api/inbound/${f.line.id}?token=wrong`, `/api/inbound/ln_nope?token=${url.searchParams.get("token")}`]) {
      const res = await call("POST", path, { body });
      expect(res.status).toBe(401);
      expect(res.body).toMatchObject({ error: { code: "invalid_inbound_token", type: "authentication_error" }, request_id: expect.stringMatching(/^req_/) });
    }
    expect(await (await db()).message.count({ where: { lineId: f.line.id } })).toBe(0);
    const garbage = await call("POST", `${url.pathname}${url.search}`, { raw: "<html>nope</html>" });
    expect(garbage.status).toBe(400);
    expect(garbage.body.error.code).toBe("invalid_json");
  });

  it("downloads an inbound attachment into our storage, byte for byte", async () => {
    const bb = await fake();
    const f = await connected(bb);
    const alice = phone();
    const bytes = new Uint8Array(200_000).map((_, i) => (i * 7) % 256);
    bb.receive({ from: alice, attachment: { name: "photo.png", mimeType: "image/png", bytes } });
    await bb.idle();
    const [m] = await messagesOf(f, alice);
    expect(m?.attachments).toHaveLength(1);
    const file = await (await db()).file.findFirstOrThrow({ where: { attachments: { some: { message: { lineId: f.line.id } } } } });
    const blob = await storage().open(file.storageKey);
    const chunks: Buffer[] = [];
    for await (const c of blob!.stream) chunks.push(c as Buffer);
    expect(Buffer.compare(Buffer.concat(chunks), Buffer.from(bytes))).toBe(0);
  });

  it("a message typed on the Mac becomes an outgoing message of its chat, not an inbound one", async () => {
    const bb = await fake();
    const f = await connected(bb);
    const alice = phone();
    await texted(f, alice, "hi from alice");
    bb.receive({ from: alice, text: "typed on the Mac", isFromMe: true });
    await bb.idle();
    const list = await messagesOf(f, alice);
    expect(list.map((m) => [m.text, m.is_from_me])).toEqual([
      ["typed on the Mac", true],
      ["hi from alice", false],
    ]);
  });

  it("inbound reactions become reactions; typing and read receipts are recorded", async () => {
    const bb = await fake();
    const f = await connected(bb);
    const alice = phone();
    const m = await texted(f, alice, "react to me");
    bb.receive({ from: alice, text: "Loved “react to me”", associatedMessageGuid: `p:0/${m.guid}`, associatedMessageType: "love" });
    await bb.idle();
    const reactions = await get(`/v1/reactions?message_id=${m.guid}`, f.key);
    expect(reactions.body.data).toEqual([expect.objectContaining({ type: "love", added: true, sender: alice })]);
    await bb.remoteTyping(`iMessage;-;${alice}`, true);
    await bb.idle();
    const chat = await (await db()).chat.findFirstOrThrow({ where: { lineId: f.line.id, identifier: alice }, include: { typing: true } });
    expect(chat.typing).toEqual([expect.objectContaining({ handle: alice, isTyping: true })]);
  });
});

describe("sending through BlueBubbles", () => {
  it("sends text into the chat's own GUID with the Private API; its own webhooks are matched, not stored", async () => {
    const bb = await fake({ osVersion: "26.1" });
    const f = await connected(bb);
    const alice = phone();
    await texted(f, alice, "hello");
    // macOS 26 writes any;-; GUIDs: whatever the chat's GUID is, it is used as given.
    await (await db()).chat.updateMany({ where: { lineId: f.line.id }, data: { providerChatId: `iMessage;-;${alice}` } });
    const id = await send(f, alice, { text: "hi back" });
    expect(await settled(f, id)).toMatchObject({ status: "sent" });
    const sent = fromUs(bb, "hi back");
    expect(sent).toHaveLength(1);
    const request = bb.requests.find((r) => r.path === "/api/v1/message/text");
    expect(request?.body).toMatchObject({ chatGuid: `iMessage;-;${alice}`, tempGuid: id, method: "private-api", message: "hi back" });
    await bb.markDelivered(sent[0]!.guid);
    await bb.markRead(sent[0]!.guid);
    await bb.idle();
    const list = await messagesOf(f, alice);
    expect(list.map((m) => m.text)).toEqual(["hi back", "hello"]);
    expect(list[0]).toMatchObject({ guid: sent[0]!.guid, is_from_me: true });
  });

  it("held sends do not hold up the line: later sends go first; when due together they go oldest first, at the line's pace", async () => {
    const bb = await fake();
    const f = await connected(bb, { rate: 20 });
    const alice = phone();
    await texted(f, alice, "hello");
    const at = Date.now() + 1_500;
    const scheduled: string[] = [];
    for (let i = 0; i < 3; i++) scheduled.push(await send(f, alice, { text: `scheduled ${i}`, send_at: at }));
    const now = await send(f, alice, { text: "right away" });
    expect(await settled(f, now)).toMatchObject({ status: "sent" });
    for (const id of scheduled) expect((await outbox(f, id)).status).toBe("pending");
    for (const id of scheduled) expect(await settled(f, id)).toMatchObject({ status: "sent" });
    const ours = bb.messages.filter((m) => m.isFromMe && m.text?.startsWith("scheduled"));
    expect(ours.map((m) => m.text)).toEqual(["scheduled 0", "scheduled 1", "scheduled 2"]);
    expect(Math.min(...ours.map((m) => m.dateCreated))).toBeGreaterThanOrEqual(at);
    // Claimed never faster than the line's pace (20/s: a pacing slot every 50 ms).
    const claims = await (await db()).outboxItem.findMany({ where: { id: { in: scheduled } }, select: { attemptStartedAt: true } });
    const times = claims.map((c) => c.attemptStartedAt!.getTime()).sort((a, b) => a - b);
    for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(50);
    expect(fromUs(bb, "right away")[0]!.dateCreated).toBeLessThan(at);
  });

  it("a send that times out but reached the Mac is adopted, not resent", async () => {
    const bb = await fake();
    const f = await connected(bb, { timeout: 5 });
    const alice = phone();
    await texted(f, alice, "hello");
    webhooksOn = false; // only reconciliation can tell
    try {
      bb.faults.hangAfterSend = 1;
      const id = await send(f, alice, { text: "did it go?" });
      expect(await settled(f, id, 40_000)).toMatchObject({ status: "sent" });
      expect(fromUs(bb, "did it go?")).toHaveLength(1);
      const [m] = await messagesOf(f, alice);
      expect(m).toMatchObject({ text: "did it go?", guid: fromUs(bb, "did it go?")[0]!.guid });
      expect(bb.requests.filter((r) => r.path === "/api/v1/message/query").length).toBeGreaterThan(0);
    } finally {
      webhooksOn = true;
    }
  }, 60_000);

  it("a send the Mac never got is retried and sent once", async () => {
    const bb = await fake();
    const f = await connected(bb, { timeout: 5 });
    const alice = phone();
    await texted(f, alice, "hello");
    bb.faults.hangWithoutSend = 1;
    const id = await send(f, alice, { text: "second try" });
    await vi.waitFor(async () => expect((await outbox(f, id)).error).toBeTruthy(), { timeout: 20_000, interval: 200 });
    expect(fromUs(bb, "second try")).toHaveLength(0);
    await bb.restart(); // its stuck send ends with the server (BlueBubbles' own 2-minute limit, sooner)
    expect(await settled(f, id, 40_000)).toMatchObject({ status: "sent" });
    expect(fromUs(bb, "second try")).toHaveLength(1);

    // Refused connections: certainly not sent; the item waits and goes out once the Mac is back.
    await bb.close();
    const id2 = await send(f, alice, { text: "while away" });
    await vi.waitFor(async () => expect((await outbox(f, id2)).error).toMatch(/could not reach BlueBubbles/), { timeout: 10_000, interval: 100 });
    await bb.restart();
    expect(await settled(f, id2, 40_000)).toMatchObject({ status: "sent" });
    expect(fromUs(bb, "while away")).toHaveLength(1);
  }, 90_000);

  it("a clear rejection fails the item with a readable reason; an auto line falls back to SMS", async () => {
    const bb = await fake();
    const f = await connected(bb);
    const alice = phone();
    await texted(f, alice, "hello");
    bb.imessageRegistered = new Set();
    const id = await send(f, alice, { text: "are you there?" });
    expect(await settled(f, id)).toMatchObject({ status: "failed", error: expect.stringContaining("not registered with iMessage") });

    const bb2 = await fake();
    const auto = await connected(bb2, { service: "auto" });
    const bob = phone();
    await texted(auto, bob, "hi");
    bb2.imessageRegistered = new Set();
    const id2 = await send(auto, bob, { text: "as SMS" });
    expect(await settled(auto, id2)).toMatchObject({ status: "sent" });
    const [m] = await messagesOf(auto, bob);
    expect(m).toMatchObject({ text: "as SMS", service: "sms" });
    expect(bb2.requests.some((r) => r.path === "/api/v1/chat/new" && (r.body as { service?: string }).service === "SMS")).toBe(true);
    expect((await (await db()).outboxItem.findUniqueOrThrow({ where: { id: id2 } })).service).toBe("sms");
  });

  it("an attachment with text goes as two parts; reactions, typing and read receipts use the Private API", async () => {
    const bb = await fake();
    const f = await connected(bb);
    const alice = phone();
    const first = await texted(f, alice, "send me a file");
    const upload = await call("POST", "/v1/files", { key: f.key, raw: new Uint8Array([1, 2, 3, 4]), headers: { "content-type": "image/png", "x-filename": "dot.png" } });
    expect(upload.status).toBe(201);
    const id = await send(f, alice, { text: "here it is", attachments: [upload.body.id] });
    expect(await settled(f, id)).toMatchObject({ status: "sent" });
    const att = bb.requests.find((r) => r.path === "/api/v1/message/attachment");
    expect(att?.body).toMatchObject({ chatGuid: `iMessage;-;${alice}`, name: "dot.png", tempGuid: id });
    await vi.waitFor(() => expect(fromUs(bb, "here it is")).toHaveLength(1));
    await bb.idle();
    // Both parts' echoes are ours: one outgoing message, not a second one "typed on the Mac".
    expect((await messagesOf(f, alice)).filter((m) => m.is_from_me)).toHaveLength(1);

    const react = await post("/v1/reactions", f.key, { from: f.line.handle, to: alice, message_id: first.guid, type: "laugh" });
    const typing = await post("/v1/typing", f.key, { from: f.line.handle, to: alice });
    const read = await post("/v1/receipts", f.key, { from: f.line.handle, to: alice });
    for (const r of [react, typing, read]) expect(await settled(f, r.body.id)).toMatchObject({ status: "sent" });
    expect(bb.requests.find((r) => r.path === "/api/v1/message/react")?.body).toMatchObject({ selectedMessageGuid: first.guid, reaction: "laugh" });
    const unreact = await post("/v1/reactions", f.key, { from: f.line.handle, to: alice, message_id: first.guid, type: "laugh", remove: true });
    expect(await settled(f, unreact.body.id)).toMatchObject({ status: "sent" });
    expect(bb.requests.filter((r) => r.path === "/api/v1/message/react").map((r) => (r.body as { reaction: string }).reaction)).toEqual(["laugh", "-laugh"]);
    const mine = await get(`/v1/reactions?message_id=${first.guid}`, f.key);
    expect(mine.body.data).toEqual([expect.objectContaining({ type: "laugh", added: false, is_from_me: true })]);
    expect(bb.privateApiCalls.map((c) => c.type)).toEqual(expect.arrayContaining(["start-typing", "mark-read"]));
  });
});

describe("replies and voice memos", () => {
  it("a reply threads with selectedMessageGuid; a voice memo goes as an audio message attachment", async () => {
    const bb = await fake();
    const f = await connected(bb);
    const alice = phone();
    const parent = await texted(f, alice, "thread me");
    const reply = await send(f, alice, { text: "threaded", reply_to: parent.guid });
    expect(await settled(f, reply)).toMatchObject({ status: "sent" });
    expect(bb.requests.find((r) => (r.body as { message?: string })?.message === "threaded")?.body).toMatchObject({
      selectedMessageGuid: parent.guid,
      partIndex: 0,
      method: "private-api",
    });

    const dir = mkdtempSync(path.join(tmpdir(), "relay-bb-audio-"));
    try {
      const wav = path.join(dir, "memo.wav");
      await promisify(execFile)("ffmpeg", ["-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:duration=1", "-c:a", "pcm_s16le", wav]);
      const upload = await call("POST", "/v1/files", { key: f.key, raw: new Uint8Array(readFileSync(wav)), headers: { "content-type": "audio/wav", "x-filename": "memo.wav" } });
      expect(upload.status).toBe(201);
      const memo = await post("/v1/audio-messages", f.key, { from: f.line.handle, to: alice, audio_message: upload.body.id });
      expect(memo.status).toBe(200);
      expect(await settled(f, memo.body.id)).toMatchObject({ status: "sent" });
      const sent = bb.requests.filter((r) => r.path === "/api/v1/message/attachment").at(-1);
      expect(sent?.body).toMatchObject({ isAudioMessage: "true", name: "memo.caf", chatGuid: `iMessage;-;${alice}` });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("ordering, pacing and isolation", () => {
  it("sends on one line go out one at a time, in outbox order, paced by the line's rate", async () => {
    const bb = await fake();
    const f = await connected(bb, { rate: 2 });
    const alice = phone();
    await texted(f, alice, "hello");
    const ids = [];
    for (let i = 1; i <= 4; i++) ids.push(await send(f, alice, { text: `in order ${i}` }));
    for (const id of ids) await settled(f, id);
    const sent = bb.messages.filter((m) => m.isFromMe && m.text?.startsWith("in order"));
    expect(sent.map((m) => m.text)).toEqual(["in order 1", "in order 2", "in order 3", "in order 4"]);
    // Rate 2/s spaces the starts of the sends 500 ms apart on our side; the fake stamps each when
    // its request arrives, which a loaded machine can delay by some tens of ms for one and not the
    // next. Unpaced sends land within a few ms of each other, so 350 ms still tells them apart.
    for (let i = 1; i < sent.length; i++) expect(sent[i]!.dateCreated - sent[i - 1]!.dateCreated).toBeGreaterThanOrEqual(350);
  });

  it("a hanging provider on one line does not delay another line", async () => {
    const slow = await fake();
    const fast = await fake();
    const a = await connected(slow, { timeout: 30 });
    const b = await connected(fast);
    const alice = phone();
    await texted(a, alice, "hi");
    await texted(b, alice, "hi");
    slow.faults.sendDelayMs = 8_000;
    const stuck = await send(a, alice, { text: "slow one" });
    await vi.waitFor(async () => expect((await outbox(a, stuck)).status).toBe("claimed"), { timeout: 5_000, interval: 50 });
    const started = Date.now();
    const quick = await send(b, alice, { text: "quick one" });
    expect(await settled(b, quick, 5_000)).toMatchObject({ status: "sent" });
    expect(Date.now() - started).toBeLessThan(4_000);
    expect((await outbox(a, stuck)).status).toBe("claimed");
    expect(await settled(a, stuck, 30_000)).toMatchObject({ status: "sent" });
  }, 45_000);
});

describe("nothing missed, health and bad answers", () => {
  it("three messages that arrive while the service is down are all there after catch-up, once each", async () => {
    const bb = await fake();
    const f = await connected(bb);
    await post("/v1/webhooks", f.key, { from: f.line.handle, url: "https://example.com/hook", events: ["message.received"] });
    const alice = phone();
    await texted(f, alice, "before");
    webhooksOn = false;
    dropped.length = 0;
    try {
      for (const t of ["one", "two", "three"]) bb.receive({ from: alice, text: t });
      await bb.idle();
    } finally {
      webhooksOn = true;
    }
    expect((await messagesOf(f, alice)).map((m) => m.text)).toEqual(["before"]);
    const report = await catchUpLine(f.line.id);
    expect(report.counts.stored).toBe(3);
    expect((await catchUpLine(f.line.id)).counts.stored).toBe(0);
    for (const d of dropped) await deliver(d.url, d.body as { type: string; data: unknown }); // late webhooks: duplicates
    expect((await messagesOf(f, alice)).map((m) => m.text)).toEqual(["three", "two", "one", "before"]);
    const hooks = await (await db()).webhookDelivery.count({ where: { event: "message.received", webhook: { lineId: f.line.id } } });
    expect(hooks).toBe(4);
  });

  it("a message whose webhook was lost while later ones arrived is still caught up", async () => {
    const bb = await fake();
    const f = await connected(bb);
    const alice = phone();
    webhooksOn = false;
    try {
      bb.receive({ from: alice, text: "lost in transit" });
      await bb.idle();
    } finally {
      webhooksOn = true;
    }
    await new Promise((r) => setTimeout(r, 20));
    await texted(f, alice, "arrived"); // moves the catch-up cursor past the lost one
    expect((await messagesOf(f, alice)).map((m) => m.text)).toEqual(["arrived"]);
    expect((await catchUpLine(f.line.id)).counts.stored).toBe(1);
    expect((await messagesOf(f, alice)).map((m) => m.text)).toEqual(["arrived", "lost in transit"]);
  });

  it("a Mac that stops answering makes the line degraded, then disconnected; sends wait and go out on recovery", async () => {
    const bb = await fake();
    const f = await connected(bb);
    await post("/v1/webhooks", f.key, { from: f.line.handle, url: "https://example.com/hook", events: ["line.status_changed"] });
    const alice = phone();
    await texted(f, alice, "hello");
    await bb.close();
    const { probeLine } = await import("@/server/services/lines/line-health");
    await probeLine(await lineRow(f.line.id));
    expect(await lineRow(f.line.id)).toMatchObject({ status: "degraded", statusReason: expect.stringMatching(/could not reach BlueBubbles|connection to BlueBubbles lost/) });
    await probeLine(await lineRow(f.line.id));
    await probeLine(await lineRow(f.line.id));
    expect((await lineRow(f.line.id)).status).toBe("disconnected");
    forgetCachedLines();
    const id = await send(f, alice, { text: "queued while away" });
    await new Promise((r) => setTimeout(r, 1_000));
    expect((await outbox(f, id)).status).toBe("pending"); // waits, does not fail
    // Held up by its line, on every interface alike.
    expect(await outbox(f, id)).toMatchObject({ hold_reason: "line_unavailable", not_before: null });
    const viaGraphql = await gql(f.key, `query($id: String!) { outboxItem(id: $id) { status holdReason notBefore } }`, { id });
    expect(viaGraphql.body.data.outboxItem).toEqual({ status: "pending", holdReason: "line_unavailable", notBefore: null });
    await bb.restart();
    await (await db()).line.update({ where: { id: f.line.id }, data: { lastProbeAt: null } });
    await probeDueLines();
    expect((await lineRow(f.line.id)).status).toBe("connected");
    expect(await settled(f, id)).toMatchObject({ status: "sent" });
    const events = await (await db()).webhookDelivery.findMany({ where: { event: "line.status_changed", webhook: { lineId: f.line.id } }, orderBy: { id: "asc" } });
    expect(events.map((e) => (e.payload as { status: string }).status)).toEqual(["degraded", "disconnected", "connected"]);
  });

  it("garbage, HTML, an error envelope in a 200 and a 50 MB body never mark a message sent", async () => {
    const bb = await fake();
    const f = await connected(bb);
    const alice = phone();
    await texted(f, alice, "hello");
    for (const mode of ["html", "garbage", "error-envelope", "huge"] as const) {
      bb.faults.mode = mode;
      const report = await testLine(f.accountId, f.line.id);
      expect(report.probe.ok).toBe(false);
      expect(report.probe.reason).toMatch(/unexpected response from BlueBubbles|iMessage|error/i);
    }
    bb.faults.mode = null;
    expect((await testLine(f.accountId, f.line.id)).line.status).toBe("connected");
    bb.faults.mode = "html";
    const id = await send(f, alice, { text: "not yet" });
    await vi.waitFor(async () => expect((await outbox(f, id)).error).toBeTruthy(), { timeout: 10_000, interval: 100 });
    expect((await outbox(f, id)).status).not.toBe("sent");
    bb.faults.mode = null;
    await (await db()).line.update({ where: { id: f.line.id }, data: { lastProbeAt: null } });
    await probeDueLines();
    expect(await settled(f, id)).toMatchObject({ status: "sent" });
    expect(fromUs(bb, "not yet")).toHaveLength(1);
  }, 60_000);
});

import http from "node:http";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { AuthenticationError, InvalidRequestError, NotFoundError, Relay, verifyWebhook, type Chat } from "@/packages/client/src/index";
import { revokeApiKeyBySecret } from "@/server/services/access/api-keys";
import { newId } from "@/server/kernel/ids";
import { dispatch, inbound, makeAccount, makeKey, phone, runDelivery, type Fixture } from "./helpers";

// The client library end to end against the real route handlers, in-process: its fetch hands
// each request to the route module, so no network server runs.

const routeFetch: typeof fetch = async (input, init) => dispatch(new Request(input, init));
const relayFor = (f: Fixture, key = f.key) => new Relay({ apiKey: key, baseUrl: "http://localhost:3000", fetch: routeFetch, retryDelayMs: 1 });

const received: { rawBody: string; headers: http.IncomingHttpHeaders }[] = [];
const receiver = http.createServer((req, res) => {
  let rawBody = "";
  req.on("data", (c) => (rawBody += c));
  req.on("end", () => {
    received.push({ rawBody, headers: req.headers });
    res.writeHead(200).end("ok");
  });
});
let receiverUrl = "";

beforeAll(async () => {
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;
});
runDelivery();
afterAll(async () => {
  receiver.closeAllConnections();
  await new Promise<void>((resolve) => receiver.close(() => resolve()));
});

describe("the client against the real routes", () => {
  it("sends a message and waits for the outbox to report it sent", async () => {
    const f = await makeAccount();
    const relay = relayFor(f);
    const alice = phone();
    await inbound(f, alice, "hi line");
    const accepted = await relay.messages.send({ from: f.line.handle, to: alice, text: "hello from the client" });
    expect(accepted).toMatchObject({ object: "outbox_item", id: expect.stringMatching(/^obx_/), status: "pending" });
    const item = await relay.outbox.wait(accepted.id, { timeoutMs: 15_000, intervalMs: 20 });
    expect(item).toMatchObject({ id: accepted.id, status: "sent", error: null });
    const page = await relay.messages.list({ from: f.line.handle, to: alice });
    expect(page.data[0]).toMatchObject({ text: "hello from the client", is_from_me: true, outbox_id: accepted.id });
    expect(await relay.messages.get(page.data[0]!.id)).toMatchObject({ id: page.data[0]!.id, text: "hello from the client" });
    const outbox = await relay.outbox.list({ from: f.line.handle, status: "sent" });
    expect(outbox.data.map((o) => o.id)).toContain(accepted.id);
  });

  it("uploads a file, sends it as an attachment, and gets its download URL", async () => {
    const f = await makeAccount();
    const relay = relayFor(f);
    const bob = phone();
    await inbound(f, bob);
    const bytes = new TextEncoder().encode("%PDF-1.4 client test");
    const file = await relay.files.upload(new Blob([bytes], { type: "application/pdf" }), { filename: "report é.pdf" });
    expect(file).toMatchObject({ object: "file", id: expect.stringMatching(/^file_/), filename: "report é.pdf", mime_type: "application/pdf", size: bytes.length });
    const url = await relay.files.downloadUrl(file.id);
    const download = await routeFetch(url);
    expect(download.status).toBe(200);
    expect(new Uint8Array(await download.arrayBuffer())).toEqual(bytes);
    const accepted = await relay.messages.send({ from: f.line.handle, to: bob, attachments: [file.id] });
    expect((await relay.outbox.wait(accepted.id, { timeoutMs: 15_000, intervalMs: 20 })).status).toBe("sent");
    const [message] = (await relay.messages.list({ from: f.line.handle, to: bob, limit: 1 })).data;
    expect(message!.attachments[0]).toMatchObject({ file_id: file.id, filename: "report é.pdf" });
  });

  it("lists chats page by page and iterates them all", async () => {
    const f = await makeAccount();
    const relay = relayFor(f);
    const contacts = [phone(), phone(), phone(), phone(), phone()];
    for (const c of contacts) await inbound(f, c);
    const first = await relay.chats.list({ from: f.line.handle, limit: 2 });
    expect(first.data).toHaveLength(2);
    expect(first.has_more).toBe(true);
    const all: Chat[] = [];
    for await (const chat of relay.chats.iterate({ from: f.line.handle, limit: 2 })) all.push(chat);
    expect(all.map((c) => c.identifier).sort()).toEqual([...contacts].sort());
    const lines = await relay.lines.list();
    expect(lines.data.map((l) => l.handle)).toContain(f.line.handle);
  });

  it("answers bad input with typed errors carrying code, param and requestId", async () => {
    const f = await makeAccount();
    const relay = relayFor(f);
    const stranger = phone();
    const notYet = await relay.messages.send({ from: f.line.handle, to: stranger, text: "hi?" }).catch((e: unknown) => e);
    expect(notYet).toBeInstanceOf(InvalidRequestError);
    expect(notYet).toMatchObject({ code: "contact_has_not_messaged", status: 403, requestId: expect.stringMatching(/^req_/) });
    const missing = await relay.chats.list({ from: "" }).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(InvalidRequestError);
    expect((missing as InvalidRequestError).param).toBe("from");
    await expect(relay.outbox.get(newId("outbox"))).rejects.toBeInstanceOf(NotFoundError);
    await expect(relayFor(f, "sk_live_wrong").lines.list()).rejects.toBeInstanceOf(AuthenticationError);
  });

  it("replays a retried send instead of sending twice (same Idempotency-Key)", async () => {
    const f = await makeAccount();
    const alice = phone();
    await inbound(f, alice);
    // The first attempt reaches the server but its answer is lost: the client retries.
    let attempts = 0;
    const lossy: typeof fetch = async (input, init) => {
      const response = await routeFetch(input, init);
      if (++attempts === 1) throw new TypeError("socket hang up");
      return response;
    };
    const relay = new Relay({ apiKey: f.key, baseUrl: "http://localhost:3000", fetch: lossy, retryDelayMs: 1 });
    const accepted = await relay.messages.send({ from: f.line.handle, to: alice, text: "exactly once" });
    expect(attempts).toBe(2);
    await relay.outbox.wait(accepted.id, { timeoutMs: 15_000, intervalMs: 20 });
    const texts = (await relay.messages.list({ from: f.line.handle, to: alice })).data.map((m) => m.text);
    expect(texts.filter((t) => t === "exactly once")).toHaveLength(1);
  });

  it("creates a webhook and verifies a real delivery's signature with verifyWebhook", async () => {
    const f = await makeAccount();
    const relay = relayFor(f);
    const hook = await relay.webhooks.create({ from: f.line.handle, url: receiverUrl, events: ["message.received"] });
    expect(hook.secret).toMatch(/^whsec_/);
    const message = await inbound(f, phone(), "signed hello");
    await vi.waitFor(() => expect(received.some((r) => r.rawBody.includes(message.id))).toBe(true), { timeout: 10_000, interval: 20 });
    const delivery = received.find((r) => r.rawBody.includes(message.id))!;
    const event = await verifyWebhook(delivery.rawBody, delivery.headers, hook.secret!);
    expect(event.event).toBe("message.received");
    if (event.event === "message.received") expect(event.data).toMatchObject({ id: message.id, text: "signed hello" });
    const standardOnly = Object.fromEntries(Object.entries(delivery.headers).filter(([k]) => k.startsWith("webhook-")));
    await expect(verifyWebhook(delivery.rawBody, standardOnly as Record<string, string>, hook.secret!)).resolves.toMatchObject({ delivery_id: event.delivery_id });
    await vi.waitFor(async () => expect((await relay.webhooks.deliveries({ webhook_id: hook.id })).data[0]?.status).toBe("succeeded"), { timeout: 10_000, interval: 20 });
    expect(await relay.webhooks.delivery(event.delivery_id)).toMatchObject({ id: event.delivery_id, attempt_log: [expect.objectContaining({ status_code: 200 })] });
    const disabled = await relay.webhooks.disable(hook.id);
    expect(disabled.is_active).toBe(false);
    expect((await relay.webhooks.enable(hook.id)).is_active).toBe(true);
    const rotated = await relay.webhooks.rotateSecret(hook.id);
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(hook.secret);
    expect((await relay.webhooks.list({ from: f.line.handle })).data.map((w) => w.id)).toEqual([hook.id]);
    expect(await relay.webhooks.delete(hook.id)).toEqual(expect.objectContaining({ id: hook.id, deleted: true }));
  });

  it("listens to the account's events over GET /v1/listen", async () => {
    const f = await makeAccount();
    const relay = relayFor(f);
    const controller = new AbortController();
    const sessions: string[] = [];
    const events = relay.listen({ events: "message.received" }, { signal: controller.signal, onSession: (s) => sessions.push(s.session) });
    const first = events.next();
    await vi.waitFor(() => expect(sessions).toHaveLength(1), { timeout: 10_000, interval: 20 });
    const message = await inbound(f, phone(), "heard live");
    const { value } = await first;
    expect(value).toMatchObject({ event: "message.received", data: { id: message.id, text: "heard live" }, delivery_id: expect.stringMatching(/^dlv_/) });
    expect(sessions[0]).toMatch(/^lsn_/);
    controller.abort();
    await expect(events.next()).resolves.toMatchObject({ done: true });
  });

  it("stops listening with an AuthenticationError when the key is revoked mid-stream, without reconnecting", async () => {
    const f = await makeAccount();
    const key = await makeKey(f.accountId);
    const relay = relayFor(f, key);
    const sessions: string[] = [];
    const reconnects: unknown[] = [];
    const events = relay.listen({}, { onSession: (s) => sessions.push(s.session), onReconnect: (r) => reconnects.push(r) });
    const first = events.next();
    await vi.waitFor(() => expect(sessions).toHaveLength(1), { timeout: 10_000, interval: 20 });
    expect(await revokeApiKeyBySecret(key)).toBe(true);
    const error = await first.then(
      () => null,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(AuthenticationError);
    expect(error).toMatchObject({ code: "invalid_api_key", status: 401, requestId: expect.stringMatching(/^req_/) });
    expect(reconnects).toEqual([]);
    expect(sessions).toHaveLength(1);
    await expect(events.next()).resolves.toMatchObject({ done: true });
  });
});

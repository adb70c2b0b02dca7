import http from "node:http";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { AuthenticationError, InvalidRequestError, NotFoundError, Relay, verifyWebhook, type Chat } from "@/packages/client/src/index";
import { revokeApiKeyBySecret } from "@/server/services/access/api-keys";
import { newId } from "@/server/kernel/ids";
import { createLine } from "@/server/services/lines/lines";
import { setLinePolicy } from "@/server/services/lines/set-line-policy";
import { createPool } from "@/server/services/pools/pools";
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

  it("sends a batch: each message's item or error in order, and the accepted ones are sent", async () => {
    const f = await makeAccount();
    const relay = relayFor(f);
    const [alice, stranger] = [phone(), phone()];
    await inbound(f, alice, "hi line");
    const result = await relay.messages.sendBatch([
      { from: f.line.handle, to: alice, text: "one" },
      { from: f.line.handle, to: stranger, text: "not yet" },
      { from: f.line.handle, to: alice, text: "two" },
    ]);
    expect(result.object).toBe("list");
    const [one, refused, two] = result.data;
    expect(refused).toEqual({ error: expect.objectContaining({ code: "contact_has_not_messaged", param: "to" }), request_id: expect.stringMatching(/^req_/) });
    for (const item of [one, two]) {
      if (!item || !("id" in item)) throw new Error(`expected an accepted item, got ${JSON.stringify(item)}`);
      expect((await relay.outbox.wait(item.id, { timeoutMs: 15_000, intervalMs: 20 })).status).toBe("sent");
    }
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

  it("schedules a send with send_at, shows it held as scheduled, and cancels it: it is never sent", async () => {
    const f = await makeAccount();
    const relay = relayFor(f);
    const alice = phone();
    await inbound(f, alice);
    const sendAt = Date.now() + 10 * 60_000;
    const accepted = await relay.messages.send({ from: f.line.handle, to: alice, text: "in ten minutes", send_at: sendAt });
    expect(accepted).toMatchObject({ id: expect.stringMatching(/^obx_/), status: "pending" });
    expect(await relay.outbox.get(accepted.id)).toMatchObject({ status: "pending", hold_reason: "scheduled", not_before: sendAt, canceled_at: null, attempts: 0 });
    expect((await relay.outbox.list({ from: f.line.handle, status: "pending" })).data.map((o) => o.id)).toContain(accepted.id);

    const before = Date.now();
    const canceled = await relay.outbox.cancel(accepted.id);
    expect(canceled).toMatchObject({ id: accepted.id, status: "failed", error: "canceled", hold_reason: null, not_before: null });
    expect(canceled.canceled_at).toBeGreaterThanOrEqual(before - 1_000);
    expect(canceled.canceled_at).toBeLessThanOrEqual(Date.now());
    // Canceling again (a retry whose first answer was lost) resolves with the same item.
    expect(await relay.outbox.cancel(accepted.id)).toMatchObject({ id: accepted.id, status: "failed", canceled_at: canceled.canceled_at });
    expect(await relay.outbox.get(accepted.id)).toMatchObject({ status: "failed", error: "canceled", canceled_at: canceled.canceled_at });

    // A message already sent cannot be called off; a time that has passed is refused.
    const now = await relay.messages.send({ from: f.line.handle, to: alice, text: "right away" });
    expect((await relay.outbox.wait(now.id, { timeoutMs: 15_000, intervalMs: 20 })).status).toBe("sent");
    const tooLate = await relay.outbox.cancel(now.id).catch((e: unknown) => e);
    expect(tooLate).toBeInstanceOf(InvalidRequestError);
    expect(tooLate).toMatchObject({ code: "outbox_item_not_cancelable", status: 409 });
    const past = await relay.messages.send({ from: f.line.handle, to: alice, text: "yesterday", send_at: Date.now() - 60_000 }).catch((e: unknown) => e);
    expect(past).toBeInstanceOf(InvalidRequestError);
    expect(past).toMatchObject({ code: "invalid_parameter_value", param: "send_at", status: 400 });
    const texts = (await relay.messages.list({ from: f.line.handle, to: alice })).data.map((m) => m.text);
    expect(texts).toContain("right away");
    expect(texts).not.toContain("in ten minutes");
    expect(texts).not.toContain("yesterday");
  });

  it("reschedules a pending send: it goes out at the new time, not the old one", async () => {
    const f = await makeAccount();
    const relay = relayFor(f);
    const bob = phone();
    await inbound(f, bob);
    const accepted = await relay.messages.send({ from: f.line.handle, to: bob, text: "moved", send_at: Date.now() + 60 * 60_000 });
    const later = Date.now() + 2 * 60 * 60_000;
    expect(await relay.outbox.reschedule(accepted.id, later)).toMatchObject({ id: accepted.id, status: "pending", hold_reason: "scheduled", not_before: later });
    expect((await relay.outbox.get(accepted.id)).not_before).toBe(later);
    const tooFar = await relay.outbox.reschedule(accepted.id, Date.now() + 400 * 24 * 3_600_000).catch((e: unknown) => e);
    expect(tooFar).toMatchObject({ code: "invalid_parameter_value", param: "send_at", status: 400 });

    const soon = Date.now() + 1_500;
    await relay.outbox.reschedule(accepted.id, soon);
    expect((await relay.outbox.get(accepted.id)).status).toBe("pending");
    const sent = await relay.outbox.wait(accepted.id, { timeoutMs: 15_000, intervalMs: 50 });
    expect(sent).toMatchObject({ status: "sent", hold_reason: null, not_before: null });
    expect(sent.completed_at).toBeGreaterThanOrEqual(soon);
    const [message] = (await relay.messages.list({ from: f.line.handle, to: bob, limit: 1 })).data;
    expect(message).toMatchObject({ text: "moved", outbox_id: accepted.id });
    const again = await relay.outbox.reschedule(accepted.id, Date.now() + 60_000).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(InvalidRequestError);
    expect(again).toMatchObject({ code: "outbox_item_not_reschedulable", status: 409 });
  });

  it("reports a line's capacity: new-contact budgets per hour and day, and the sends that wait", async () => {
    const f = await makeAccount();
    await setLinePolicy(null, f.line.id, { contact_first: false, new_contacts_per_hour: 2, new_contacts_per_day: 5 });
    const relay = relayFor(f);
    const fresh = await relay.capacity.get(f.line.handle);
    expect(fresh).toMatchObject({ object: "capacity", from: f.line.handle, pool_id: null });
    expect(fresh.lines).toHaveLength(1);
    expect(fresh.lines[0]).toMatchObject({
      line_id: f.line.id,
      handle: f.line.handle,
      status: "connected",
      new_contacts: { hour: { used: 0, limit: 2, remaining: 2, resets_at: null }, day: { used: 0, limit: 5, remaining: 5, resets_at: null } },
      quiet_hours: { active: false, until: null },
      queued: { scheduled: 0, quiet_hours: 0, new_contact_budget: 0, line_rate: 0, line_unavailable: 0, approval: 0 },
    });
    expect(fresh.lines[0]!.next_slot_at).toBeLessThanOrEqual(Date.now());

    // A first message to someone who never wrote opens a conversation: a slot of each window.
    const opened = await relay.messages.send({ from: f.line.handle, to: phone(), text: "first contact" });
    const sent = await relay.outbox.wait(opened.id, { timeoutMs: 15_000, intervalMs: 20 });
    expect(sent.status).toBe("sent");
    await relay.messages.send({ from: f.line.handle, to: phone(), text: "tomorrow", send_at: Date.now() + 24 * 3_600_000 });
    const after = await relay.capacity.get(f.line.id); // by ln_ ID too
    const line = after.lines[0]!;
    expect(line.new_contacts.hour).toMatchObject({ used: 1, limit: 2, remaining: 1 });
    expect(line.new_contacts.day).toMatchObject({ used: 1, limit: 5, remaining: 4 });
    expect(line.new_contacts.hour.resets_at! - sent.completed_at!).toBeGreaterThan(3_600_000 - 15_000);
    expect(line.new_contacts.hour.resets_at! - sent.completed_at!).toBeLessThanOrEqual(3_600_000);
    expect(line.queued.scheduled).toBe(1);

    const unknown = await relay.capacity.get(newId("pool")).catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(NotFoundError);
    expect(unknown).toMatchObject({ code: "pool_not_found", status: 404 });
  });

  it("lists the account's pools; a pool_ ID is a from of send and of capacity", async () => {
    const f = await makeAccount();
    const second = await createLine({ accountId: f.accountId, handle: phone(), advancedFeatures: true });
    const pool = await createPool(f.accountId, { name: "support", line_ids: [f.line.id, second.id] });
    const relay = relayFor(f);
    const pools = await relay.pools.list();
    expect(pools).toMatchObject({ has_more: false, next_cursor: null });
    expect(pools.data).toHaveLength(1);
    expect(pools.data[0]).toMatchObject({ object: "pool", id: pool.id, name: "support", created_at: pool.created_at });
    expect([...pools.data[0]!.line_ids].sort()).toEqual([f.line.id, second.id].sort());

    const capacity = await relay.capacity.get(pool.id);
    expect(capacity.pool_id).toBe(pool.id);
    expect(capacity.lines.map((l) => l.handle).sort()).toEqual([f.line.handle, second.handle].sort());

    // Alice talks with the first line: a send from the pool goes from that line.
    const alice = phone();
    await inbound(f, alice);
    const accepted = await relay.messages.send({ from: pool.id, to: alice, text: "from the pool" });
    expect(await relay.outbox.wait(accepted.id, { timeoutMs: 15_000, intervalMs: 20 })).toMatchObject({ status: "sent", line_id: f.line.id, pool_id: pool.id });

    const other = relayFor(await makeAccount());
    expect((await other.pools.list()).data).toEqual([]);
    await expect(other.capacity.get(pool.id)).rejects.toMatchObject({ code: "pool_not_found" });
  });
});

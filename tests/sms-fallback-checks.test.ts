import http from "node:http";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createLine } from "@/server/services/lines/lines";
import { setLinePolicy } from "@/server/services/lines/set-line-policy";
import { createPool } from "@/server/services/pools/pools";
import type { GuardrailsInput } from "@/server/policy/key-guardrails";
import { get, inbound, makeAccount, makeKey, phone, post, runDelivery, type Fixture } from "./helpers";

// SMS fallback from a pool runs the checks of a new send from the SMS line it moves to, for the
// key that made the send (issue 37): the key's lines, allow_to, a pause, the reply limit,
// contact-first and the line's policy. With no SMS line left, the item fails no_fallback_line
// and nothing goes out; message.failed tells a receiver on loopback.

runDelivery();

const q = encodeURIComponent;
type Item = { id: string; status: string; line_id: string; fallback: boolean; error: string | null; hold_reason: string | null };

const failedEvents: { outbox_id: string; error: string; line_id: string }[] = [];
const receiver = http.createServer((req, res) => {
  let body = "";
  req.on("data", (c) => (body += c));
  req.on("end", () => {
    const event = JSON.parse(body) as { event: string; data: { outbox_id: string; error: string; line_id: string } };
    if (event.event === "message.failed") failedEvents.push(event.data);
    res.writeHead(200).end("ok");
  });
});
let hookUrl = "";
beforeAll(async () => {
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  hookUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/failed`;
});
afterAll(async () => {
  receiver.closeAllConnections();
  await new Promise<void>((resolve) => receiver.close(() => resolve()));
});

async function settled(key: string, id: string): Promise<Item> {
  let item: Item | null = null;
  await vi.waitFor(
    async () => {
      item = (await get(`/v1/outbox?id=${id}`, key)).body;
      expect(["sent", "failed"]).toContain(item!.status);
    },
    { timeout: 15_000, interval: 25 },
  );
  return item!;
}

/** An account whose pool holds its iMessage line and an SMS line; `carol` cannot receive iMessage. */
async function mixedPool(options: { wroteSms?: boolean } = {}) {
  const f = await makeAccount();
  const line = await createLine({ accountId: f.accountId, handle: phone(), service: "sms" });
  const sms: Fixture = { ...f, line: { id: line.id, handle: line.handle } };
  const pool = await createPool(f.accountId, { name: "mixed", line_ids: [f.line.id, line.id] });
  const carol = phone();
  // She texted the SMS line once, then the iMessage line, which a pool send now sticks to.
  if (options.wroteSms !== false) await inbound(sms, carol, "by SMS");
  await inbound(f, carol, "by iMessage");
  expect((await post("/api/simulator/reachability", f.key, { line: f.line.handle, handle: carol, imessage: false })).status).toBe(200);
  return { f, sms, pool, carol };
}

const chatOn = async (f: Fixture, line: Fixture["line"], carol: string): Promise<string> =>
  (await get(`/v1/chats?from=${q(line.handle)}`, f.key)).body.data.find((c: { identifier: string }) => c.identifier === carol).id;

/** What the lines sent to `carol`, as the owner reads it. */
async function sentTo(f: Fixture, line: Fixture["line"], carol: string): Promise<string[]> {
  const { body } = await get(`/v1/messages?from=${q(line.handle)}&to=${q(carol)}`, f.key);
  return (body.data ?? []).filter((m: { is_from_me: boolean }) => m.is_from_me).map((m: { text: string }) => m.text);
}

async function expectNoFallback(s: Awaited<ReturnType<typeof mixedPool>>, key: string, text: string): Promise<Item> {
  const res = await post("/v1/messages", key, { from: s.pool.id, to: s.carol, text });
  expect(res.status).toBe(200);
  const item = await settled(key, res.body.id);
  expect(item).toMatchObject({ status: "failed", line_id: s.f.line.id, error: expect.stringMatching(/^no_fallback_line: /) });
  expect(await sentTo(s.f, s.sms.line, s.carol)).not.toContain(text);
  expect(await sentTo(s.f, s.f.line, s.carol)).not.toContain(text);
  return item;
}

const guarded = (f: Fixture, guardrails: GuardrailsInput) => makeKey(f.accountId, { guardrails });

describe("SMS fallback checks the SMS line as a new send from it", () => {
  it("a key restricted to the iMessage line never sends from the pool's SMS line: no_fallback_line, and message.failed says so", async () => {
    const s = await mixedPool();
    expect((await post("/v1/webhooks", s.f.key, { from: s.f.line.handle, url: hookUrl, events: ["message.failed"] })).status).toBe(200);
    const key = await makeKey(s.f.accountId, { lineIds: [s.f.line.id] });
    const item = await expectNoFallback(s, key, "only from my line");
    expect(item.error).toBe(
      `no_fallback_line: ${s.carol} cannot receive iMessage, and no SMS line of pool ${s.pool.id} may send this message instead. 1 SMS line of the pool is not one the API key that made the send may use.`,
    );
    expect(item.error).not.toContain(s.sms.line.handle);
    await vi.waitFor(() => expect(failedEvents.find((e) => e.outbox_id === item.id)).toEqual(expect.objectContaining({ error: item.error, line_id: s.f.line.id })), {
      timeout: 10_000,
      interval: 25,
    });
  });

  it("a chat the owner paused on the SMS line refuses a guarded key's fallback; the owner's own send still falls back into it", async () => {
    const s = await mixedPool();
    const smsChat = await chatOn(s.f, s.sms.line, s.carol);
    expect((await post(`/v1/chats/pause?id=${smsChat}`, s.f.key)).status).toBe(200);
    const agent = await guarded(s.f, { max_sends_per_day: 100 });
    const item = await expectNoFallback(s, agent, "agent");
    expect(item.error).toContain(`From ${s.sms.line.handle}: The owner has paused automated sending in chat ${smsChat}`);

    const owner = await post("/v1/messages", s.f.key, { from: s.pool.id, to: s.carol, text: "the owner" });
    expect(await settled(s.f.key, owner.body.id)).toMatchObject({ status: "sent", fallback: true, line_id: s.sms.line.id });
    expect(await sentTo(s.f, s.sms.line, s.carol)).toEqual(["the owner"]);
  });

  it("allow_to listing only the iMessage chat does not reach the contact from the SMS line", async () => {
    const s = await mixedPool();
    const agent = await guarded(s.f, { allow_to: [await chatOn(s.f, s.f.line, s.carol)] });
    const item = await expectNoFallback(s, agent, "listed chat only");
    expect(item.error).toContain(`From ${s.sms.line.handle}: This API key may not send to ${s.carol}: it is not on the key's allow_to list.`);
  });

  it("counts the key's sends into the SMS chat: max_sends_per_chat_without_reply holds there", async () => {
    const s = await mixedPool();
    const agent = await guarded(s.f, { max_sends_per_chat_without_reply: 1 });
    const direct = await post("/v1/messages", agent, { from: s.sms.line.handle, to: s.carol, text: "straight by SMS" });
    expect(await settled(agent, direct.body.id)).toMatchObject({ status: "sent" });
    await inbound(s.f, s.carol, "back on iMessage"); // resets the iMessage chat's count, not the SMS chat's
    const item = await expectNoFallback(s, agent, "a second SMS");
    expect(item.error).toContain(`From ${s.sms.line.handle}: This API key has sent 1 messages to chat ${await chatOn(s.f, s.sms.line, s.carol)} since the contact last wrote`);
    expect(await sentTo(s.f, s.sms.line, s.carol)).toEqual(["straight by SMS"]);
  });

  it("contact-first: a contact who never texted the SMS line is not texted from it, unless the line may write first", async () => {
    const s = await mixedPool({ wroteSms: false });
    const item = await expectNoFallback(s, s.f.key, "not yet");
    expect(item.error).toContain(`From ${s.sms.line.handle}: ${s.carol} has not messaged line ${s.sms.line.handle} yet.`);

    await setLinePolicy(null, s.sms.line.id, { contact_first: false });
    const res = await post("/v1/messages", s.f.key, { from: s.pool.id, to: s.carol, text: "now it may" });
    expect(await settled(s.f.key, res.body.id)).toMatchObject({ status: "sent", fallback: true, line_id: s.sms.line.id });
    expect(await sentTo(s.f, s.sms.line, s.carol)).toEqual(["now it may"]);
  });

  it("the OpenAPI document names no_fallback_line among an outbox item's errors", async () => {
    const doc = (await get("/v1/openapi.json")).body;
    expect(doc.components.schemas.OutboxItem.properties.error.description).toContain('"no_fallback_line: …"');
  });

  it("the SMS line's policy holds the moved send: inside its quiet hours it waits there", async () => {
    const s = await mixedPool({ wroteSms: false });
    const hh = (h: number) => `${String((h + 24) % 24).padStart(2, "0")}:00`;
    const hour = new Date().getUTCHours();
    await setLinePolicy(null, s.sms.line.id, { contact_first: false, quiet_hours: { start: hh(hour - 1), end: hh(hour + 2), timezone: "UTC" } });
    const res = await post("/v1/messages", s.f.key, { from: s.pool.id, to: s.carol, text: "after quiet hours" });
    await vi.waitFor(
      async () =>
        expect((await get(`/v1/outbox?id=${res.body.id}`, s.f.key)).body).toMatchObject({
          status: "pending",
          hold_reason: "quiet_hours",
          line_id: s.sms.line.id,
          fallback: true,
        }),
      { timeout: 15_000, interval: 25 },
    );
    expect(await sentTo(s.f, s.sms.line, s.carol)).toEqual([]);
  });
});

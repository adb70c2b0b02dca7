import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { claimDue, releaseExpiredLeases } from "@/server/outbox/queue";
import { deliver, deliverBatch } from "@/server/outbox/deliver";
import { serialRounds, startRunner, stopRunner } from "@/server/engine/outbox-runner";
import { hit } from "@/server/services/access/rate-limit";
import { newId } from "@/server/kernel/ids";
import { DAY_MS, sandboxQuotaBucket } from "@/server/services/lines/sandbox";
import { call, db, get, inbound, makeAccount, phone, post, type Fixture } from "./helpers";

const q = encodeURIComponent;

beforeAll(() => startRunner());
afterAll(() => stopRunner());

async function waitFinal(f: Fixture, id: string) {
  let item: { status: string } = { status: "pending" };
  await vi.waitFor(
    async () => {
      item = (await get(`/v1/outbox?id=${id}`, f.key)).body;
      expect(["sent", "failed"]).toContain(item.status);
    },
    { timeout: 15_000, interval: 20 },
  );
  return item as { status: string; error: string | null; attempts: number; completed_at: number | null };
}

describe("POST /v1/messages", () => {
  it("accepts at once with a pending outbox item, then the runner sends it", async () => {
    const f = await makeAccount();
    const alice = phone();
    const incoming = await inbound(f, alice, "hi line");
    const res = await post("/v1/messages", f.key, { from: f.line.handle, to: alice, text: "hello back" });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ object: "outbox_item", id: expect.stringMatching(/^obx_/), status: "pending", request_id: expect.stringMatching(/^req_/) });
    const final = await waitFinal(f, res.body.id);
    expect(final).toMatchObject({ status: "sent", error: null, attempts: 1, completed_at: expect.any(Number) });
    const messages = await get(`/v1/messages?from=${q(f.line.handle)}&to=${q(alice)}`, f.key);
    expect(messages.body.data[0]).toMatchObject({
      text: "hello back",
      is_from_me: true,
      sender: f.line.handle,
      outbox_id: res.body.id,
      chat_id: incoming.chat_id,
      guid: expect.any(String),
    });
    const chat = (await get(`/v1/chats?from=${q(f.line.handle)}`, f.key)).body.data[0];
    expect(chat.last_message_at).toBe(messages.body.data[0].sent_at);
  });

  it("shows what the line sent to the simulated phone at GET /api/simulator/messages", async () => {
    const f = await makeAccount();
    const [alice, bob] = [phone(), phone()];
    await inbound(f, alice, "hi from alice");
    await inbound(f, bob, "hi from bob");
    const toAlice = await post("/v1/messages", f.key, { from: f.line.handle, to: alice, text: "for alice" });
    const toBob = await post("/v1/messages", f.key, { from: f.line.handle, to: bob, text: "for bob" });
    await waitFinal(f, toAlice.body.id);
    await waitFinal(f, toBob.body.id);
    const phoneView = await get(`/api/simulator/messages?line=${q(f.line.handle)}&contact=${q(alice)}`, f.key);
    expect(phoneView.status).toBe(200);
    expect(phoneView.body.data).toEqual([expect.objectContaining({ text: "for alice", is_from_me: true, outbox_id: toAlice.body.id })]);
    const all = await get(`/api/simulator/messages?line=${q(f.line.handle)}`, f.key);
    expect(all.body.data.map((m: { text: string }) => m.text).sort()).toEqual(["for alice", "for bob"]);
    const other = await makeAccount();
    expect((await get(`/api/simulator/messages?line=${q(f.line.handle)}`, other.key)).body.error.code).toBe("line_not_found");
    expect((await get(`/api/simulator/messages`, f.key)).body.error).toMatchObject({ code: "missing_required_parameter", param: "line" });
  });

  it("sends one attachment, replies, and group chats by cht_ ID", async () => {
    const f = await makeAccount();
    const [alice, bob] = [phone(), phone()];
    const parent = await inbound(f, alice, "a question", { group: { participants: [bob], name: "Pair" } });
    const file = await call("POST", "/v1/files", { key: f.key, raw: new TextEncoder().encode("pdf-bytes"), headers: { "content-type": "application/pdf", "x-filename": "answer.pdf" } });
    const res = await post("/v1/messages", f.key, { from: f.line.handle, to: parent.chat_id, attachments: [file.body.id], reply_to: parent.guid });
    expect(res.status).toBe(200);
    expect((await waitFinal(f, res.body.id)).status).toBe("sent");
    const sent = (await get(`/v1/messages?from=${q(f.line.handle)}&to=${parent.chat_id}`, f.key)).body.data[0];
    expect(sent).toMatchObject({ text: null, reply_to_guid: parent.guid, is_from_me: true });
    expect(sent.attachments).toEqual([expect.objectContaining({ file_id: file.body.id, filename: "answer.pdf", mime_type: "application/pdf", size: 9 })]);
  });

  it("sends a message with only an attachment, as the contract allows; with neither text nor attachments the error names both", async () => {
    const f = await makeAccount();
    const alice = phone();
    await inbound(f, alice, "send me the form");
    const file = await call("POST", "/v1/files", { key: f.key, raw: new TextEncoder().encode("%PDF-1.4"), headers: { "content-type": "application/pdf", "x-filename": "form.pdf" } });
    for (const body of [{ attachments: [file.body.id] }, { text: null, attachments: [file.body.id] }, { text: "", attachments: [file.body.id] }]) {
      const res = await post("/v1/messages", f.key, { from: f.line.handle, to: alice, ...body });
      expect(res.status, JSON.stringify(body)).toBe(200);
      expect(res.body).toMatchObject({ object: "outbox_item", status: "pending" });
    }
    // A file named under another field (file, attachment) is no attachment: the answer says which fields count.
    for (const body of [{}, { attachments: [] }, { file: file.body.id }, { attachment: file.body.id, text: null }]) {
      const res = await post("/v1/messages", f.key, { from: f.line.handle, to: alice, ...body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error).toMatchObject({ code: "missing_required_parameter", param: "text", message: expect.stringContaining("text or attachments") });
      expect(res.body.request_id).toMatch(/^req_/);
    }
  });

  it("enforces the contact-first rule", async () => {
    const f = await makeAccount();
    const stranger = await post("/v1/messages", f.key, { from: f.line.handle, to: phone(), text: "cold call" });
    expect(stranger.status).toBe(403);
    expect(stranger.body.error).toMatchObject({ type: "invalid_request_error", code: "contact_has_not_messaged", param: "to" });
    const typer = phone();
    await post("/api/simulator/typing", f.key, { line: f.line.handle, from: typer, is_typing: true });
    const onlyTyped = await post("/v1/messages", f.key, { from: f.line.handle, to: typer, text: "hi" });
    expect(onlyTyped.body.error.code).toBe("contact_has_not_messaged");
    const unknownChat = await post("/v1/messages", f.key, { from: f.line.handle, to: newId("chat"), text: "hi" });
    expect(unknownChat.status).toBe(404);
    expect(unknownChat.body.error.code).toBe("chat_not_found");
  });

  it("validates the request", async () => {
    const f = await makeAccount();
    const alice = phone();
    const m = await inbound(f, alice, "hi");
    const base = { from: f.line.handle, to: alice };
    const cases: [unknown, number, string, string][] = [
      [{ ...base }, 400, "missing_required_parameter", "text"],
      [{ ...base, text: "" }, 400, "missing_required_parameter", "text"],
      [{ from: f.line.handle, text: "x" }, 400, "missing_required_parameter", "to"],
      [{ ...base, text: "x".repeat(20_001) }, 400, "invalid_parameter_value", "text"],
      [{ ...base, attachments: [newId("file"), newId("file")] }, 400, "invalid_parameter_value", "attachments"],
      [{ ...base, attachments: ["msg_123"] }, 400, "invalid_parameter_value", "attachments"],
      [{ ...base, attachments: "file_x" }, 400, "invalid_parameter_value", "attachments"],
      [{ ...base, attachments: [newId("file")] }, 404, "file_not_found", "attachments"],
      [{ ...base, text: "x", reply_to: "NO-SUCH-GUID" }, 404, "message_not_found", "reply_to"],
      [{ ...base, text: "x", reply_to: "cht_01" }, 400, "invalid_parameter_value", "reply_to"],
      [{ ...base, from: "+19999999999", text: "x" }, 404, "line_not_found", "from"],
    ];
    for (const [body, status, code, param] of cases) {
      const res = await post("/v1/messages", f.key, body);
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(status);
      expect(res.body.error, JSON.stringify(body).slice(0, 80)).toMatchObject({ code, param });
    }
    const otherChat = await inbound(f, phone(), "elsewhere");
    const wrongChat = await post("/v1/messages", f.key, { ...base, text: "x", reply_to: otherChat.id });
    expect(wrongChat.body.error).toMatchObject({ code: "invalid_parameter_value", param: "reply_to" });
    const readOnly = await makeAccount({ scopes: ["messages:read"] });
    expect((await post("/v1/messages", readOnly.key, { ...base, text: "x" })).body.error.code).toBe("insufficient_scope");
    expect(m.id).toMatch(/^msg_/);
  });

  it("documented test recipients: +15005550001 fails permanently, +15005550002 succeeds on the third attempt", async () => {
    const f = await makeAccount();
    await inbound(f, "+15005550001", "hi");
    await inbound(f, "+15005550002", "hi");
    const bad = await post("/v1/messages", f.key, { from: f.line.handle, to: "+15005550001", text: "x" });
    const flaky = await post("/v1/messages", f.key, { from: f.line.handle, to: "+15005550002", text: "y" });
    const failed = await waitFinal(f, bad.body.id);
    expect(failed).toMatchObject({ status: "failed", error: "recipient is not reachable on this service", attempts: 1 });
    const sent = await waitFinal(f, flaky.body.id);
    expect(sent).toMatchObject({ status: "sent", attempts: 3, error: null });
    const sentMessages = (await get(`/v1/messages?from=${q(f.line.handle)}`, f.key)).body.data.filter((m: { is_from_me: boolean }) => m.is_from_me);
    expect(sentMessages.map((m: { text: string }) => m.text)).toEqual(["y"]);
  });

  it("sandbox: only the paired phone, and 50 messages a day", async () => {
    const f = await makeAccount();
    const code = (await post("/v1/sandbox", f.key)).body.activation_code;
    const sandbox = (await get("/v1/sandbox", f.key)).body.sandbox_line_handle;
    const mine = phone();
    const beforePairing = await post("/v1/messages", f.key, { from: sandbox, to: mine, text: "x" });
    expect(beforePairing.body.error.code).toBe("sandbox_not_activated");
    await post("/api/simulator/messages", f.key, { line: sandbox, from: mine, text: code });
    const other = await post("/v1/messages", f.key, { from: sandbox, to: phone(), text: "x" });
    expect(other.status).toBe(400);
    expect(other.body.error).toMatchObject({ code: "sandbox_contact_mismatch", param: "to" });
    const ok = await post("/v1/messages", f.key, { from: sandbox, to: mine, text: "hello me" });
    expect(ok.status).toBe(200);
    expect((await waitFinal(f, ok.body.id)).status).toBe("sent");
    expect((await get("/v1/sandbox", f.key)).body.usage).toMatchObject({ used: 1, remaining: 49 });

    await hit(sandboxQuotaBucket(f.accountId), 50, DAY_MS, 49);
    const over = await post("/v1/messages", f.key, { from: sandbox, to: mine, text: "one too many" });
    expect(over.status).toBe(429);
    expect(over.body.error).toMatchObject({ type: "rate_limit_error", code: "sandbox_quota_exceeded" });
    const retryAfter = Number(over.headers.get("retry-after"));
    const midnight = Math.ceil((Math.floor(Date.now() / DAY_MS + 1) * DAY_MS - Date.now()) / 1000);
    expect(Math.abs(retryAfter - midnight)).toBeLessThanOrEqual(2);
  });
});

describe("outbox delivery", () => {
  it("sends on a simulated line are delivered without waking the provider-line loop for each one", async () => {
    const f = await makeAccount();
    const alice = phone();
    await inbound(f, alice, "hi");
    const started = Date.now();
    const before = serialRounds();
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) ids.push((await post("/v1/messages", f.key, { from: f.line.handle, to: alice, text: `m${i}` })).body.id);
    // The provider-line loop polls on its own (every 200 ms at most); a write on a simulated
    // line used to wake it as well, so it went round about once per send.
    const polls = Math.ceil((Date.now() - started) / 200) + 2;
    expect(serialRounds() - before).toBeLessThanOrEqual(Math.min(polls, 10));
    for (const id of ids) expect((await waitFinal(f, id)).status).toBe("sent");
  });

  it("a claim whose worker died returns to pending and is sent once", async () => {
    await stopRunner();
    try {
      const f = await makeAccount();
      const alice = phone();
      await inbound(f, alice, "hi");
      const res = await post("/v1/messages", f.key, { from: f.line.handle, to: alice, text: "survive a crash" });
      const [claimed] = await claimDue(10);
      expect(claimed?.id).toBe(res.body.id);
      expect((await get(`/v1/outbox?id=${res.body.id}`, f.key)).body.status).toBe("claimed");
      // The worker "crashes": its lease runs out.
      expect(await releaseExpiredLeases(new Date(Date.now() + 60_000))).toBe(1);
      expect((await get(`/v1/outbox?id=${res.body.id}`, f.key)).body.status).toBe("pending");
      const [again] = await claimDue(10);
      await deliver(again!);
      await deliver(again!); // delivered twice (e.g. a second worker): still one message
      expect((await get(`/v1/outbox?id=${res.body.id}`, f.key)).body).toMatchObject({ status: "sent", attempts: 2 });
      const prisma = await db();
      expect(await prisma.message.count({ where: { outboxId: res.body.id } })).toBe(1);
    } finally {
      startRunner();
    }
  });

  it("one batch of mixed items: every message written once, chats' last_message_at, mixed outcomes", async () => {
    await stopRunner();
    try {
      const f = await makeAccount();
      const [alice, bob] = [phone(), phone()];
      const a = await inbound(f, alice, "hi");
      await inbound(f, bob, "hey");
      await inbound(f, "+15005550001", "unreachable contact");
      const file = await call("POST", "/v1/files", { key: f.key, raw: new Uint8Array([1, 2, 3]), headers: { "content-type": "image/png" } });
      const ids: string[] = [];
      for (let i = 0; i < 30; i++) {
        const to = i % 2 ? alice : bob;
        const body = i % 10 === 0 ? { from: f.line.handle, to, attachments: [file.body.id] } : { from: f.line.handle, to, text: `n${i}` };
        const sent = await post("/v1/messages", f.key, body);
        expect(sent.status, JSON.stringify(sent.body)).toBe(200);
        ids.push(sent.body.id);
      }
      const react = await post("/v1/reactions", f.key, { from: f.line.handle, to: alice, message_id: a.id, type: "like" });
      const doomed = await post("/v1/messages", f.key, { from: f.line.handle, to: "+15005550001", text: "never arrives" });
      expect([react.status, doomed.status], JSON.stringify([react.body, doomed.body])).toEqual([200, 200]);
      // availableAt is stored at millisecond precision, rounded: a write in the same millisecond
      // as the claim can land up to half a millisecond "later" than now and wait one round (a
      // loaded PostgreSQL CI run once claimed 31 of 32 here). A second of slack claims them all.
      const batch = await claimDue(100, new Date(Date.now() + 1_000));
      expect(batch).toHaveLength(32);
      await deliver(batch[0]!); // one item of the batch already delivered by "another worker"
      await deliverBatch(batch);
      const prisma = await db();
      const messages = await prisma.message.findMany({ where: { outboxId: { in: ids } }, include: { attachments: true } });
      expect(messages).toHaveLength(30);
      expect(messages.filter((m) => m.attachments.length === 1)).toHaveLength(3);
      for (const id of ids) expect((await get(`/v1/outbox?id=${id}`, f.key)).body.status).toBe("sent");
      expect((await get(`/v1/outbox?id=${react.body.id}`, f.key)).body.status).toBe("sent");
      expect((await get(`/v1/outbox?id=${doomed.body.id}`, f.key)).body).toMatchObject({
        status: "failed",
        error: "recipient is not reachable on this service",
      });
      const chats = (await get(`/v1/chats?from=${q(f.line.handle)}`, f.key)).body.data as { id: string; identifier: string; last_message_at: number }[];
      for (const who of [alice, bob]) {
        const chat = chats.find((c) => c.identifier === who)!;
        const newest = Math.max(...messages.filter((m) => m.chatId === chat.id).map((m) => m.sentAt.getTime()));
        expect(chat.last_message_at).toBe(newest);
      }
    } finally {
      startRunner();
    }
  });
});

describe("POST /v1/reactions, /v1/typing, /v1/receipts", () => {
  it("react, type (and stop), and mark read; each is delivered and shows in the read endpoints", async () => {
    const f = await makeAccount();
    const alice = phone();
    const m = await inbound(f, alice, "react to this");
    const reaction = await post("/v1/reactions", f.key, { from: f.line.handle, to: alice, message_id: m.guid, type: "love" });
    expect(reaction.status).toBe(200);
    expect(reaction.body).toMatchObject({ id: expect.stringMatching(/^obx_/), status: "pending" });
    expect((await waitFinal(f, reaction.body.id)).status).toBe("sent");
    const reactions = await get(`/v1/reactions?message_id=${m.id}`, f.key);
    expect(reactions.body.data).toEqual([
      expect.objectContaining({ message_id: m.id, type: "love", sender: f.line.handle, is_from_me: true, added: true }),
    ]);

    const typing = await post("/v1/typing", f.key, { from: f.line.handle, to: alice });
    expect((await waitFinal(f, typing.body.id)).status).toBe("sent");
    const shown = await get(`/v1/typing?from=${q(f.line.handle)}&to=${q(alice)}`, f.key);
    expect(shown.body.data).toEqual([expect.objectContaining({ handle: f.line.handle, is_typing: true })]);
    const stop = await post("/v1/typing", f.key, { from: f.line.handle, to: alice, state: "off" });
    expect((await waitFinal(f, stop.body.id)).status).toBe("sent");
    expect((await get(`/v1/typing?from=${q(f.line.handle)}&to=${q(alice)}`, f.key)).body.data[0].is_typing).toBe(false);

    const receipt = await post("/v1/receipts", f.key, { from: f.line.handle, to: alice });
    expect((await waitFinal(f, receipt.body.id)).status).toBe("sent");
    const receipts = await get(`/v1/receipts?from=${q(f.line.handle)}&to=${q(alice)}`, f.key);
    expect(receipts.body.data).toEqual([expect.objectContaining({ handle: f.line.handle, last_read_at: expect.any(Number) })]);
  });

  it("need advanced features, the right scope, a contact that messaged first, and valid input", async () => {
    const basic = await makeAccount({ advanced: false });
    const bob = phone();
    const bm = await inbound(basic, bob, "hi");
    for (const [path, body] of [
      ["/v1/reactions", { message_id: bm.id, type: "like" }],
      ["/v1/typing", {}],
      ["/v1/receipts", {}],
    ] as const) {
      const res = await post(path, basic.key, { from: basic.line.handle, to: bob, ...body });
      expect(res.status, path).toBe(400);
      expect(res.body.error, path).toMatchObject({ type: "invalid_request_error", code: "advanced_features_required" });
    }

    const f = await makeAccount();
    const alice = phone();
    const m = await inbound(f, alice, "hi");
    const stranger = await post("/v1/typing", f.key, { from: f.line.handle, to: phone() });
    expect(stranger.body.error.code).toBe("contact_has_not_messaged");
    expect((await post("/v1/reactions", f.key, { from: f.line.handle, to: alice, message_id: m.id, type: "hug" })).body.error).toMatchObject({
      code: "invalid_parameter_value",
      param: "type",
    });
    expect((await post("/v1/reactions", f.key, { from: f.line.handle, to: alice, type: "like" })).body.error).toMatchObject({
      code: "missing_required_parameter",
      param: "message_id",
    });
    const elsewhere = await inbound(f, phone(), "other chat");
    expect((await post("/v1/reactions", f.key, { from: f.line.handle, to: alice, message_id: elsewhere.id, type: "like" })).body.error).toMatchObject({
      code: "invalid_parameter_value",
      param: "message_id",
    });
    expect((await post("/v1/typing", f.key, { from: f.line.handle, to: alice, state: "maybe" })).body.error).toMatchObject({
      code: "invalid_parameter_value",
      param: "state",
    });
    const group = await inbound(f, alice, "group", { group: { participants: [phone()] } });
    const groupTyping = await post("/v1/typing", f.key, { from: f.line.handle, to: group.chat_id });
    expect(groupTyping.status).toBe(400);
    expect(groupTyping.body.error).toMatchObject({ code: "invalid_parameter_value", param: "to" });
    expect(groupTyping.body.error.message).toMatch(/one-to-one/);

    const readOnly = await makeAccount({ scopes: ["reactions:read", "typing:read", "receipts:read"] });
    for (const path of ["/v1/reactions", "/v1/typing", "/v1/receipts"]) {
      expect((await post(path, readOnly.key, { from: readOnly.line.handle, to: alice })).body.error.code, path).toBe("insufficient_scope");
    }
  });
});

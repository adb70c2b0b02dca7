import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { sessionActorFor } from "@/server/services/access/session";
import { startRunner, stopRunner } from "@/server/engine/outbox-runner";
import { createLine } from "@/server/services/lines/lines";
import { createCaller } from "@/server/transports/trpc/router";
import { handleDashboardUpload } from "@/server/transports/http/dashboard-upload";
import { db, inbound, makeAccount, phone, post, type Fixture } from "./helpers";

// The dashboard's inbox: chats of every line with their last message and unread count, a
// chat's sends that have no message yet (a failed one stays, with its reason, until it is sent
// again), Retry, and the owner's read marker. Nothing of one account shows in another's.

beforeAll(() => startRunner());
afterAll(() => stopRunner());

const as = (f: Pick<Fixture, "accountId">) => createCaller({ actor: sessionActorFor(f.accountId), requestId: "req_test" });
/** The simulated platform fails every send to this number for good. */
const UNREACHABLE = "+15005550001";

describe("inbox", () => {
  it("lists the chats of every line, newest first, with the last message's preview and unread counts that opening a chat clears", async () => {
    const f = await makeAccount();
    const second = await createLine({ accountId: f.accountId, handle: phone(), advancedFeatures: true });
    const ada = phone();
    const bob = phone();
    await inbound(f, ada, "first from ada");
    await inbound(f, ada, "second from ada");
    await inbound({ ...f, line: { id: second.id, handle: second.handle } }, bob, "hello on the second line");

    const all = await as(f).chats.inbox({ limit: 25 });
    expect(all.data.map((c) => [c.identifier, c.line_handle, c.unread_count, c.last_message?.preview])).toEqual([
      [bob, second.handle, 1, "hello on the second line"],
      [ada, f.line.handle, 2, "second from ada"],
    ]);
    const one = await as(f).chats.inbox({ limit: 25, line: f.line.handle });
    expect(one.data.map((c) => c.identifier)).toEqual([ada]);
    expect((await as(f).chats.inbox({ limit: 25, search: bob.slice(-7) })).data.map((c) => c.identifier)).toEqual([bob]);

    const adaChat = one.data[0]!;
    const read = await as(f).chats.markRead({ id: adaChat.id });
    expect(read).toMatchObject({ object: "chat_read", chat_id: adaChat.id });
    expect((await as(f).chats.inbox({ limit: 25, line: f.line.handle })).data[0]).toMatchObject({ unread_count: 0 });
    await inbound(f, ada, "after you looked");
    expect((await as(f).chats.inbox({ limit: 25, line: f.line.handle })).data[0]).toMatchObject({
      unread_count: 1,
      last_message: { preview: "after you looked", is_from_me: false },
    });

    // A read receipt sent to the chat (POST /v1/receipts) reads it too.
    expect((await post("/v1/receipts", f.key, { from: f.line.handle, to: ada })).status).toBeLessThan(300);
    expect((await as(f).chats.inbox({ limit: 25, line: f.line.handle })).data[0]).toMatchObject({ unread_count: 0 });

    // Pages: one chat a page, the cursor leads to the other.
    const first = await as(f).chats.inbox({ limit: 1 });
    expect(first.has_more).toBe(true);
    const next = await as(f).chats.inbox({ limit: 1, cursor: first.next_cursor! });
    expect([first.data[0]!.identifier, next.data[0]!.identifier].sort()).toEqual([ada, bob].sort());

    // Another account sees none of it, and cannot mark it read.
    const other = await makeAccount();
    expect((await as(other).chats.inbox({ limit: 25 })).data).toEqual([]);
    await expect(as(other).chats.markRead({ id: adaChat.id })).rejects.toMatchObject({ cause: expect.objectContaining({ code: "chat_not_found" }) });
  });

  it("keeps a failed send in its chat with the reason after a reload, and Retry sends it again once", async () => {
    const f = await makeAccount();
    await inbound(f, UNREACHABLE, "text me back");
    const chat = (await as(f).chats.inbox({ limit: 25 })).data[0]!;
    const sent = await as(f).chats.send({ from: f.line.handle, to: chat.id, text: "will not arrive" });
    await vi.waitFor(async () => expect((await as(f).outbox.get({ id: sent.id })).status).toBe("failed"));

    // A fresh read (a reload) still has it, failed, with the provider's reason.
    const unsent = await as(f).chats.unsent({ chat_id: chat.id });
    expect(unsent).toEqual([
      expect.objectContaining({ outbox_id: sent.id, status: "failed", text: "will not arrive", error: expect.stringContaining("not reachable") }),
    ]);
    expect((await as(f).chats.inbox({ limit: 25 })).data[0]).toMatchObject({ last_send: { outbox_id: sent.id, status: "failed" } });

    const again = await as(f).chats.retry({ id: sent.id });
    expect(again).toMatchObject({ object: "outbox_item", status: "pending" });
    expect(again.id).not.toBe(sent.id);
    const row = await (await db()).outboxItem.findUniqueOrThrow({ where: { id: again.id } });
    expect(row).toMatchObject({ retryOf: sent.id, chatId: chat.id, kind: "message" });
    expect(row.payload).toMatchObject({ text: "will not arrive", chat_id: chat.id });
    // The retried item no longer shows; the new one does (it fails again: the number is unreachable).
    await vi.waitFor(async () => expect((await as(f).outbox.get({ id: again.id })).status).toBe("failed"));
    expect((await as(f).chats.unsent({ chat_id: chat.id })).map((u) => u.outbox_id)).toEqual([again.id]);

    // Retrying twice, or something that did not fail, is refused with the documented code.
    await expect(as(f).chats.retry({ id: sent.id })).rejects.toMatchObject({
      cause: expect.objectContaining({ code: "invalid_parameter_value", param: "id", message: expect.stringContaining(again.id) }),
    });
    await inbound(f, "+15557771234", "hi");
    const ok = await as(f).chats.send({ from: f.line.handle, to: "+15557771234", text: "fine" });
    await vi.waitFor(async () => expect((await as(f).outbox.get({ id: ok.id })).status).toBe("sent"));
    await expect(as(f).chats.retry({ id: ok.id })).rejects.toMatchObject({ cause: expect.objectContaining({ code: "invalid_parameter_value" }) });
    // Another account cannot retry it.
    const other = await makeAccount();
    await expect(as(other).chats.retry({ id: again.id })).rejects.toMatchObject({ cause: expect.objectContaining({ code: "outbox_item_not_found" }) });
  });

  it("a send to a chat has its chat on the outbox row, and a pending send shows until it is sent", async () => {
    const f = await makeAccount();
    const contact = phone();
    await inbound(f, contact, "hi");
    const chat = (await as(f).chats.inbox({ limit: 25 })).data[0]!;
    const sent = await as(f).chats.send({ from: f.line.handle, to: contact, text: "on its way" });
    const row = await (await db()).outboxItem.findUniqueOrThrow({ where: { id: sent.id } });
    expect(row.chatId).toBe(chat.id);
    await vi.waitFor(async () => expect((await as(f).outbox.get({ id: sent.id })).status).toBe("sent"));
    expect(await as(f).chats.unsent({ chat_id: chat.id })).toEqual([]);
    expect((await as(f).chats.inbox({ limit: 25 })).data[0]).toMatchObject({ last_send: null, last_message: { preview: "on its way", is_from_me: true } });
  });
});

describe("the dashboard's attachment upload", () => {
  const upload = (f: Pick<Fixture, "accountId"> | null, headers: Record<string, string>, body: BodyInit) =>
    handleDashboardUpload(new Request("http://localhost/api/dashboard/files", { method: "POST", headers, body }), async () =>
      f ? sessionActorFor(f.accountId) : null,
    );

  it("stores a picked file for the session's account, which a send from the page then carries", async () => {
    const f = await makeAccount();
    const contact = phone();
    await inbound(f, contact, "send me the picture");
    const res = await upload(f, { "content-type": "image/png", "x-filename": "dot.png", "x-relay-dashboard": "1" }, new Uint8Array([137, 80, 78, 71, 1, 2, 3]));
    expect(res.status).toBe(201);
    const file = await res.json();
    expect(file).toMatchObject({ object: "file", filename: "dot.png", mime_type: "image/png", size: 7 });
    expect(file.id).toMatch(/^file_/);
    const sent = await as(f).chats.send({ from: f.line.handle, to: contact, text: null, attachments: [file.id] });
    await vi.waitFor(async () => expect((await as(f).outbox.get({ id: sent.id })).status).toBe("sent"));
    const chat = (await as(f).chats.inbox({ limit: 5 })).data[0]!;
    const conversation = await as(f).chats.messages({ chat_id: chat.id, limit: 5 });
    expect(conversation.data[0]).toMatchObject({ is_from_me: true, attachments: [expect.objectContaining({ filename: "dot.png" })] });
  });

  it("refuses a signed-out caller (401) and a request without the dashboard's header (400), with a request ID", async () => {
    const f = await makeAccount();
    const out = await upload(null, { "content-type": "text/plain", "x-relay-dashboard": "1" }, "hi");
    expect(out.status).toBe(401);
    expect((await out.json()).error.code).toBe("session_required");
    const bare = await upload(f, { "content-type": "text/plain" }, "hi");
    expect(bare.status).toBe(400);
    const body = await bare.json();
    expect(body).toMatchObject({ error: { code: "invalid_parameter_value", param: "x-relay-dashboard" } });
    expect(body.request_id).toMatch(/^req_/);
    const empty = await upload(f, { "content-type": "text/plain", "x-relay-dashboard": "1" }, "");
    expect(empty.status).toBe(400);
    expect((await empty.json()).error.code).toBe("empty_file");
  });
});

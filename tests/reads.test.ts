import { describe, expect, it } from "vitest";
import { newId } from "@/server/kernel/ids";
import { db, get, inbound, makeAccount, phone, post } from "./helpers";

const q = encodeURIComponent;

describe("read endpoints", () => {
  it("GET /v1/lines returns the account's lines and the sandbox in the list envelope", async () => {
    const f = await makeAccount();
    const res = await get("/v1/lines", f.key);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ has_more: false, next_cursor: null, request_id: expect.stringMatching(/^req_/) });
    const line = res.body.data.find((l: { id: string }) => l.id === f.line.id);
    expect(line).toEqual({
      object: "line",
      id: f.line.id,
      handle: f.line.handle,
      label: null,
      service: "imessage",
      is_active: true,
      advanced_features: true,
      is_sandbox: false,
      created_at: expect.any(Number),
      provider: "simulated",
      status: "connected",
      status_reason: null,
      last_event_at: null,
      // An iMessage line's defaults: SPEC's contact-first rule, and Sendblue's published new-contact budgets.
      send_policy: { contact_first: true, new_contacts_per_hour: 10, new_contacts_per_day: 50, quiet_hours: null, rate_per_second: 1 },
    });
  });

  it("pages through chats, most recent first, with no duplicates or gaps", async () => {
    const f = await makeAccount();
    const contacts: string[] = [];
    for (let i = 0; i < 7; i++) {
      const c = phone();
      contacts.push(c);
      await inbound(f, c, `hello ${i}`, {});
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await get(`/v1/chats?from=${q(f.line.handle)}&limit=3${cursor ? `&cursor=${cursor}` : ""}`, f.key);
      expect(res.status).toBe(200);
      pages++;
      seen.push(...res.body.data.map((c: { identifier: string }) => c.identifier));
      expect(res.body.has_more).toBe(res.body.next_cursor !== null);
      cursor = res.body.next_cursor;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual([...contacts].reverse());

    const chat = (await get(`/v1/chats?from=${q(f.line.handle)}&limit=1`, f.key)).body.data[0];
    expect(chat).toEqual({
      object: "chat",
      id: expect.stringMatching(/^cht_/),
      line_id: f.line.id,
      identifier: contacts[6],
      service: "imessage",
      name: null,
      is_group: false,
      participants: [contacts[6]],
      has_received_inbound: true,
      last_message_at: expect.any(Number),
      created_at: expect.any(Number),
      paused_at: null,
      paused_by: null,
    });
  });

  it("a new chat arriving between pages does not shift later pages", async () => {
    const f = await makeAccount();
    for (let i = 0; i < 4; i++) await inbound(f, phone());
    const first = await get(`/v1/chats?from=${q(f.line.handle)}&limit=2`, f.key);
    await inbound(f, phone(), "late arrival");
    const second = await get(`/v1/chats?from=${q(f.line.handle)}&limit=2&cursor=${first.body.next_cursor}`, f.key);
    const ids = [...first.body.data, ...second.body.data].map((c: { id: string }) => c.id);
    expect(new Set(ids).size).toBe(4);
  });

  it("GET /v1/messages lists newest first, filters by contact or chat ID, and fetches one by ID", async () => {
    const f = await makeAccount();
    const alice = phone();
    const bob = phone();
    const m1 = await inbound(f, alice, "one");
    await inbound(f, bob, "from bob");
    const m3 = await inbound(f, alice, "three");
    const all = await get(`/v1/messages?from=${q(f.line.handle)}`, f.key);
    expect(all.body.data.map((m: { text: string }) => m.text)).toEqual(["three", "from bob", "one"]);
    const byPhone = await get(`/v1/messages?from=${q(f.line.handle)}&to=${q(alice)}`, f.key);
    expect(byPhone.body.data.map((m: { id: string }) => m.id)).toEqual([m3.id, m1.id]);
    const byChat = await get(`/v1/messages?from=${q(f.line.handle)}&to=${m1.chat_id}`, f.key);
    expect(byChat.body.data).toHaveLength(2);
    const paged = await get(`/v1/messages?from=${q(f.line.handle)}&limit=2`, f.key);
    expect(paged.body.has_more).toBe(true);
    const rest = await get(`/v1/messages?from=${q(f.line.handle)}&limit=2&cursor=${paged.body.next_cursor}`, f.key);
    expect(rest.body.data.map((m: { text: string }) => m.text)).toEqual(["one"]);
    expect(rest.body.has_more).toBe(false);

    const one = await get(`/v1/messages?id=${m1.id}`, f.key);
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ id: m1.id, text: "one", is_from_me: false, sender: alice });
    const byGuid = await get(`/v1/messages?id=${m1.guid}`, f.key);
    expect(byGuid.body.id).toBe(m1.id);
  });

  it("not-found codes for reads", async () => {
    const f = await makeAccount();
    const line = await get(`/v1/chats?from=${q("+19999999999")}`, f.key);
    expect(line.status).toBe(404);
    expect(line.body.error).toMatchObject({ type: "not_found_error", code: "line_not_found", param: "from" });
    const chat = await get(`/v1/messages?from=${q(f.line.handle)}&to=${q("+19999999998")}`, f.key);
    expect(chat.status).toBe(404);
    expect(chat.body.error).toMatchObject({ code: "chat_not_found", param: "to" });
    const chatId = await get(`/v1/typing?from=${q(f.line.handle)}&to=${newId("chat")}`, f.key);
    expect(chatId.body.error.code).toBe("chat_not_found");
    const msg = await get(`/v1/messages?id=${newId("message")}`, f.key);
    expect(msg.status).toBe(404);
    expect(msg.body.error.code).toBe("message_not_found");
    const rx = await get(`/v1/reactions?message_id=SOME-GUID-THAT-DOES-NOT-EXIST`, f.key);
    expect(rx.body.error.code).toBe("message_not_found");
    const obx = await get(`/v1/outbox?id=${newId("outbox")}`, f.key);
    expect(obx.status).toBe(404);
    expect(obx.body.error).toMatchObject({ code: "outbox_item_not_found", param: "id" });
  });

  it("GET /v1/reactions, /v1/typing and /v1/receipts show what the contact did", async () => {
    const f = await makeAccount();
    const alice = phone();
    const m = await inbound(f, alice, "react to me");
    const add = await post("/api/simulator/reactions", f.key, { line: f.line.handle, from: alice, message_id: m.id, type: "love", added: true });
    expect(add.status).toBe(200);
    await post("/api/simulator/reactions", f.key, { line: f.line.handle, from: alice, message_id: m.guid, type: "laugh", added: true });
    await post("/api/simulator/reactions", f.key, { line: f.line.handle, from: alice, message_id: m.id, type: "love", added: false });
    const rx = await get(`/v1/reactions?message_id=${m.id}`, f.key);
    expect(rx.status).toBe(200);
    const byType = Object.fromEntries(rx.body.data.map((r: { type: string; added: boolean }) => [r.type, r.added]));
    expect(byType).toEqual({ love: false, laugh: true });
    expect(rx.body.data[0]).toMatchObject({ id: expect.stringMatching(/^rxn_/), message_id: m.id, sender: alice, is_from_me: false });

    await post("/api/simulator/typing", f.key, { line: f.line.handle, from: alice, is_typing: true });
    const typing = await get(`/v1/typing?from=${q(f.line.handle)}&to=${q(alice)}`, f.key);
    expect(typing.body.data).toEqual([
      { object: "typing_indicator", id: expect.stringMatching(/^ind_/), chat_id: m.chat_id, handle: alice, is_typing: true, updated_at: expect.any(Number) },
    ]);
    await post("/api/simulator/typing", f.key, { line: f.line.handle, from: alice, is_typing: false });
    expect((await get(`/v1/typing?from=${q(f.line.handle)}&to=${m.chat_id}`, f.key)).body.data[0].is_typing).toBe(false);

    const before = Date.now();
    await post("/api/simulator/receipts", f.key, { line: f.line.handle, from: alice });
    const receipts = await get(`/v1/receipts?from=${q(f.line.handle)}&to=${q(alice)}`, f.key);
    expect(receipts.body.data).toEqual([
      {
        object: "read_receipt",
        id: expect.stringMatching(/^rcp_/),
        chat_id: m.chat_id,
        handle: alice,
        last_read_at: expect.any(Number),
        synced_at: expect.any(Number),
      },
    ]);
    expect(receipts.body.data[0].last_read_at).toBeGreaterThanOrEqual(before);
  });

  it("GET /v1/outbox returns one item by ID and filtered lists", async () => {
    const f = await makeAccount();
    const prisma = await db();
    const ids: string[] = [];
    for (const status of ["pending", "sent", "failed"]) {
      const id = newId("outbox");
      ids.push(id);
      await prisma.outboxItem.create({
        data: {
          id,
          accountId: f.accountId,
          lineId: f.line.id,
          kind: "message",
          payload: { to: "+15550000001", text: "hi" },
          status,
          error: status === "failed" ? "recipient is not reachable" : null,
          requestId: "req_test",
          completedAt: status === "pending" ? null : new Date(),
        },
      });
    }
    const one = await get(`/v1/outbox?id=${ids[2]}`, f.key);
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({
      id: ids[2],
      line_id: f.line.id,
      status: "failed",
      error: "recipient is not reachable",
      attempts: 0,
      max_attempts: 5,
      created_at: expect.any(Number),
      completed_at: expect.any(Number),
      request_id: expect.stringMatching(/^req_/),
    });
    const pending = await get(`/v1/outbox?id=${ids[0]}`, f.key);
    expect(pending.body).toMatchObject({ status: "pending", error: null, completed_at: null });
    const list = await get(`/v1/outbox?from=${q(f.line.handle)}`, f.key);
    expect(list.body.data.map((o: { id: string }) => o.id)).toEqual([...ids].reverse());
    const failed = await get(`/v1/outbox?status=failed`, f.key);
    expect(failed.body.data.map((o: { id: string }) => o.id)).toEqual([ids[2]]);

    // A key restricted to another line lists none of these, but still sees sandbox items.
    const { createLine } = await import("@/server/services/lines/lines");
    const { sandboxLine } = await import("@/server/services/lines/sandbox-line");
    const { makeKey } = await import("./helpers");
    const other = await createLine({ accountId: f.accountId, handle: phone() });
    const sandboxItem = newId("outbox");
    await prisma.outboxItem.create({
      data: { id: sandboxItem, accountId: f.accountId, lineId: (await sandboxLine()).id, kind: "message", payload: {}, requestId: "req_x" },
    });
    const restricted = await makeKey(f.accountId, { lineIds: [other.id] });
    expect((await get("/v1/outbox", restricted)).body.data.map((o: { id: string }) => o.id)).toEqual([sandboxItem]);
  });
});

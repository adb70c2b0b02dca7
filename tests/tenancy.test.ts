import { describe, expect, it } from "vitest";
import { db, get, inbound, makeAccount, phone, post } from "./helpers";
import { newId } from "@/server/kernel/ids";

const q = encodeURIComponent;

describe("tenant isolation: a key of account B reads nothing of account A", () => {
  it("every read and simulator route answers not-found for A's lines, chats, messages and outbox items", async () => {
    const a = await makeAccount();
    const b = await makeAccount();
    const alice = phone();
    const m = await inbound(a, alice, "private to A");
    await post("/api/simulator/reactions", a.key, { line: a.line.handle, from: alice, message_id: m.id, type: "like", added: true });
    const prisma = await db();
    const obx = newId("outbox");
    await prisma.outboxItem.create({
      data: { id: obx, accountId: a.accountId, lineId: a.line.id, kind: "message", payload: {}, requestId: "req_x" },
    });

    const lines = await get("/v1/lines", b.key);
    expect(lines.body.data.map((l: { id: string }) => l.id)).not.toContain(a.line.id);

    const reads: [string, string][] = [
      [`/v1/chats?from=${q(a.line.handle)}`, "line_not_found"],
      [`/v1/chats?from=${a.line.id}`, "line_not_found"],
      [`/v1/messages?from=${q(a.line.handle)}`, "line_not_found"],
      [`/v1/messages?id=${m.id}`, "message_not_found"],
      [`/v1/messages?id=${m.guid}`, "message_not_found"],
      [`/v1/messages?from=${q(b.line.handle)}&to=${m.chat_id}`, "chat_not_found"],
      [`/v1/reactions?message_id=${m.id}`, "message_not_found"],
      [`/v1/typing?from=${q(a.line.handle)}&to=${q(alice)}`, "line_not_found"],
      [`/v1/receipts?from=${q(a.line.handle)}&to=${q(alice)}`, "line_not_found"],
      [`/v1/outbox?id=${obx}`, "outbox_item_not_found"],
    ];
    for (const [path, code] of reads) {
      const res = await get(path, b.key);
      expect(res.status, path).toBe(404);
      expect(res.body.error.code, path).toBe(code);
    }
    const outboxList = await get("/v1/outbox", b.key);
    expect(outboxList.body.data).toEqual([]);

    const sim = await post("/api/simulator/messages", b.key, { line: a.line.handle, from: phone(), text: "spoof" });
    expect(sim.status).toBe(404);
    expect(sim.body.error.code).toBe("line_not_found");
    const rx = await post("/api/simulator/reactions", b.key, { line: b.line.handle, from: alice, message_id: m.id, type: "like", added: true });
    expect(rx.status).toBe(404);
    expect(rx.body.error.code).toBe("message_not_found");

    // A's own key still sees everything.
    expect((await get(`/v1/messages?id=${m.id}`, a.key)).status).toBe(200);
  });

  it("a line-restricted key cannot read objects of the account's other lines by ID", async () => {
    const a = await makeAccount();
    const { createLine } = await import("@/server/services/lines/lines");
    const { makeKey } = await import("./helpers");
    const second = await createLine({ accountId: a.accountId, handle: phone() });
    const m = await post("/api/simulator/messages", a.key, { line: second.handle, from: phone(), text: "on the second line" });
    const restricted = await makeKey(a.accountId, { lineIds: [a.line.id] });
    const res = await get(`/v1/messages?id=${m.body.id}`, restricted);
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe("line_not_accessible");
  });
});

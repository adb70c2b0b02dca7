import { describe, expect, it, vi } from "vitest";
import { createLine, forgetCachedLines } from "@/server/services/lines/lines";
import { setLinePolicy } from "@/server/services/lines/set-line-policy";
import { addPoolLine, createPool, removePoolLine } from "@/server/services/pools/pools";
import { get, inbound, makeAccount, makeKey, phone, post, runDelivery, db, type Fixture } from "./helpers";

// Sender pools through /v1: a pool_ ID as `from`, sticky lines, capacity-based choice with
// round-robin on ties, disconnected lines skipped, restricted keys, GET /v1/pools and capacity.

runDelivery();

async function poolAccount(lines = 2) {
  const f = await makeAccount();
  const more = [];
  for (let i = 1; i < lines; i++) more.push(await createLine({ accountId: f.accountId, handle: phone(), advancedFeatures: true }));
  const all = [{ id: f.line.id, handle: f.line.handle }, ...more.map((l) => ({ id: l.id, handle: l.handle }))];
  for (const line of all) await setLinePolicy(null, line.id, { contact_first: false });
  const pool = await createPool(f.accountId, { name: `pool ${phone()}`, line_ids: all.map((l) => l.id) });
  return { f, lines: all, pool };
}

async function sentItem(f: Fixture, id: string) {
  let item: { status: string; line_id: string; pool_id: string | null } = { status: "pending", line_id: "", pool_id: null };
  await vi.waitFor(
    async () => {
      item = (await get(`/v1/outbox?id=${id}`, f.key)).body;
      expect(item.status).toBe("sent");
    },
    { timeout: 15_000, interval: 25 },
  );
  return item;
}

describe("sender pools", () => {
  it("lists pools, and sends from the line that already talks with the contact (sticky)", async () => {
    const { f, lines, pool } = await poolAccount(3);
    const listed = await get("/v1/pools", f.key);
    expect(listed.status).toBe(200);
    expect(listed.body.data).toEqual([{ object: "pool", id: pool.id, name: pool.name, line_ids: lines.map((l) => l.id), created_at: expect.any(Number) }]);
    const alice = phone();
    await inbound({ ...f, line: lines[2]! }, alice, "hi third line");
    for (let i = 0; i < 3; i++) {
      const res = await post("/v1/messages", f.key, { from: pool.id, to: alice, text: `sticky ${i}` });
      expect(res.status).toBe(200);
      expect(await sentItem(f, res.body.id)).toMatchObject({ line_id: lines[2]!.id, pool_id: pool.id });
    }
    const msgs = await get(`/v1/messages?from=${encodeURIComponent(lines[2]!.handle)}&to=${encodeURIComponent(alice)}`, f.key);
    expect(msgs.body.data.filter((m: { is_from_me: boolean }) => m.is_from_me)).toHaveLength(3);
  });

  it("stays sticky after a restart: the choice is read from the database, not memory", async () => {
    const { f, lines, pool } = await poolAccount(2);
    const bob = phone();
    // Two sends in a row to a new contact: the second follows the first before it is even sent.
    const first = await post("/v1/messages", f.key, { from: pool.id, to: bob, text: "first" });
    const second = await post("/v1/messages", f.key, { from: pool.id, to: bob, text: "second" });
    const chosen = (await sentItem(f, first.body.id)).line_id;
    expect((await sentItem(f, second.body.id)).line_id).toBe(chosen);
    forgetCachedLines(); // what a new process starts with
    for (let i = 0; i < 3; i++) {
      const again = await post("/v1/messages", f.key, { from: pool.id, to: bob, text: `again ${i}` });
      expect((await sentItem(f, again.body.id)).line_id).toBe(chosen);
    }
    expect(lines.map((l) => l.id)).toContain(chosen);
  });

  it("opens new conversations on the line with the most budget left, round-robin on ties, skipping disconnected lines", async () => {
    const { f, lines, pool } = await poolAccount(2);
    const picks: string[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await post("/v1/messages", f.key, { from: pool.id, to: phone(), text: `new ${i}` });
      picks.push((await sentItem(f, res.body.id)).line_id);
    }
    // Each opening uses a slot, so the other line has more left next: they alternate.
    expect(new Set(picks).size).toBe(2);
    expect(picks.filter((p) => p === lines[0]!.id)).toHaveLength(2);
    const prisma = await db();
    await prisma.line.update({ where: { id: lines[0]!.id }, data: { status: "disconnected" } });
    forgetCachedLines();
    for (let i = 0; i < 3; i++) {
      const res = await post("/v1/messages", f.key, { from: pool.id, to: phone(), text: `while down ${i}` });
      expect((await sentItem(f, res.body.id)).line_id).toBe(lines[1]!.id);
    }
    await prisma.line.update({ where: { id: lines[0]!.id }, data: { status: "connected" } });
    forgetCachedLines();
  });

  it("uses only the lines a restricted key may use; none of them: 403 line_not_accessible; unknown pool: 404", async () => {
    const { f, lines, pool } = await poolAccount(2);
    const onlySecond = await makeKey(f.accountId, { lineIds: [lines[1]!.id] });
    const res = await post("/v1/messages", onlySecond, { from: pool.id, to: phone(), text: "restricted" });
    expect(res.status).toBe(200);
    expect((await sentItem(f, res.body.id)).line_id).toBe(lines[1]!.id);
    expect((await get("/v1/pools", onlySecond)).body.data[0].line_ids).toEqual([lines[1]!.id]);
    const other = await createLine({ accountId: f.accountId, handle: phone() });
    const elsewhere = await makeKey(f.accountId, { lineIds: [other.id] });
    const refused = await post("/v1/messages", elsewhere, { from: pool.id, to: phone(), text: "no" });
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe("line_not_accessible");
    const unknown = await post("/v1/messages", f.key, { from: "pool_nope", to: phone(), text: "no" });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe("pool_not_found");
    const foreign = await makeAccount();
    expect((await post("/v1/messages", foreign.key, { from: pool.id, to: phone(), text: "no" })).body.error.code).toBe("pool_not_found");
  });

  it("capacity of a pool lists each line; pools change membership", async () => {
    const { f, lines, pool } = await poolAccount(2);
    const cap = await get(`/v1/capacity?from=${pool.id}`, f.key);
    expect(cap.status).toBe(200);
    expect(cap.body).toMatchObject({ object: "capacity", pool_id: pool.id });
    expect(cap.body.lines.map((l: { line_id: string }) => l.line_id)).toEqual(lines.map((l) => l.id));
    const removed = await removePoolLine(f.accountId, pool.id, lines[0]!.id);
    expect(removed.line_ids).toEqual([lines[1]!.id]);
    const added = await addPoolLine(f.accountId, pool.id, lines[0]!.id);
    expect(added.line_ids).toEqual([lines[1]!.id, lines[0]!.id]);
    const foreign = await makeAccount();
    await expect(addPoolLine(f.accountId, pool.id, foreign.line.id)).rejects.toMatchObject({ code: "invalid_parameter_value" });
  });
});

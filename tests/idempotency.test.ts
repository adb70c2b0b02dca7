import { describe, expect, it } from "vitest";
import { deleteExpiredIdempotencyRecords, IDEMPOTENCY_TTL_MS } from "@/server/services/access/idempotency";
import { call, db, get, makeAccount, makeKey, phone } from "./helpers";

const q = encodeURIComponent;
const send = (key: string, idem: string | null, body: unknown) =>
  call("POST", "/api/simulator/messages", { key, body, headers: idem ? { "idempotency-key": idem } : {} });

describe("Idempotency-Key on POST", () => {
  it("a retry with the same key and body returns the first response without doing it again", async () => {
    const f = await makeAccount();
    const body = { line: f.line.handle, from: phone(), text: "only once" };
    const first = await send(f.key, "key-1", body);
    expect(first.status).toBe(201);
    expect(first.headers.get("idempotent-replayed")).toBe("false");
    const again = await send(f.key, "key-1", { text: body.text, from: body.from, line: body.line }); // keys reordered
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body.id).toBe(first.body.id);
    expect(again.body.request_id).not.toBe(first.body.request_id);
    const list = await get(`/v1/messages?from=${q(f.line.handle)}`, f.key);
    expect(list.body.data).toHaveLength(1);
  });

  it("the same key with a different request is a 400 idempotency_key_reused", async () => {
    const f = await makeAccount();
    await send(f.key, "key-2", { line: f.line.handle, from: phone(), text: "a" });
    const res = await send(f.key, "key-2", { line: f.line.handle, from: phone(), text: "b" });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ type: "invalid_request_error", code: "idempotency_key_reused", param: "Idempotency-Key" });
    const other = await call("POST", "/v1/sandbox", { key: f.key, headers: { "idempotency-key": "key-2" } });
    expect(other.body.error.code).toBe("idempotency_key_reused");
  });

  it("concurrent duplicates run once", async () => {
    const f = await makeAccount();
    const body = { line: f.line.handle, from: phone(), text: "race" };
    const results = await Promise.all(Array.from({ length: 5 }, () => send(f.key, "key-race", body)));
    expect(results.map((r) => r.status)).toEqual([201, 201, 201, 201, 201]);
    expect(new Set(results.map((r) => r.body.id)).size).toBe(1);
    expect(results.filter((r) => r.headers.get("idempotent-replayed") === "false")).toHaveLength(1);
    expect((await get(`/v1/messages?from=${q(f.line.handle)}`, f.key)).body.data).toHaveLength(1);
  });

  it("keeps business errors, but not validation failures, and expires after 24 hours", async () => {
    const f = await makeAccount();
    const missingLine = await send(f.key, "key-err", { line: "+19990000000", from: phone(), text: "x" });
    expect(missingLine.status).toBe(404);
    const replayed = await send(f.key, "key-err", { line: "+19990000000", from: phone(), text: "x" });
    expect(replayed.status).toBe(400); // different "from": a different request
    const same = { line: "+19990000001", from: "+15550000009", text: "x" };
    await send(f.key, "key-err2", same);
    const err2 = await send(f.key, "key-err2", same);
    expect(err2.status).toBe(404);
    expect(err2.body.error.code).toBe("line_not_found");
    expect(err2.headers.get("idempotent-replayed")).toBe("true");

    const invalid = await send(f.key, "key-fix", { line: f.line.handle });
    expect(invalid.status).toBe(400);
    const fixed = await send(f.key, "key-fix", { line: f.line.handle, from: phone(), text: "fixed" });
    expect(fixed.status).toBe(201);

    const prisma = await db();
    await prisma.idempotencyRecord.updateMany({ where: { key: "key-fix" }, data: { expiresAt: new Date(Date.now() - 1000) } });
    const afterExpiry = await send(f.key, "key-fix", { line: f.line.handle, from: phone(), text: "new request" });
    expect(afterExpiry.status).toBe(201);
    expect(afterExpiry.headers.get("idempotent-replayed")).toBe("false");
  });

  it("keys of different accounts never meet, and must be printable ASCII", async () => {
    const a = await makeAccount();
    const b = await makeAccount();
    expect((await send(a.key, "shared", { line: a.line.handle, from: phone(), text: "a" })).status).toBe(201);
    expect((await send(b.key, "shared", { line: b.line.handle, from: phone(), text: "b" })).status).toBe(201);
    const bad = await send(a.key, "has space", { line: a.line.handle, from: phone(), text: "a" });
    expect(bad.body.error).toMatchObject({ code: "invalid_parameter_value", param: "Idempotency-Key" });
  });

  it("file uploads replay the same File for the same bytes", async () => {
    const f = await makeAccount();
    const up = (bytes: string) =>
      call("POST", "/v1/files", { key: f.key, raw: new TextEncoder().encode(bytes), headers: { "content-type": "text/plain", "idempotency-key": "file-1" } });
    const first = await up("hello");
    const second = await up("hello");
    expect(second.body.id).toBe(first.body.id);
    expect(second.status).toBe(201);
    expect((await up("different")).body.error.code).toBe("idempotency_key_reused");
  });

  it("keys are per API key: another key of the account runs its own request and never sees the first's response", async () => {
    const f = await makeAccount();
    const other = await makeKey(f.accountId);
    const body = { from: f.line.handle, url: "https://example.com/hook", events: ["message.received"] };
    const mine = await call("POST", "/v1/webhooks", { key: f.key, body, headers: { "idempotency-key": "hook-1" } });
    expect(mine.status).toBe(200);
    const theirs = await call("POST", "/v1/webhooks", { key: other, body, headers: { "idempotency-key": "hook-1" } });
    expect(theirs.status).toBe(200);
    expect(theirs.headers.get("idempotent-replayed")).toBe("false");
    expect(theirs.body.id).not.toBe(mine.body.id);
    expect(theirs.body.secret).not.toBe(mine.body.secret);
  });

  it("never stores a webhook secret; a same-key replay re-reads it while unchanged, and omits it once rotated", async () => {
    const f = await makeAccount();
    const body = { from: f.line.handle, url: "https://example.com/hook", events: ["message.received"] };
    const create = () => call("POST", "/v1/webhooks", { key: f.key, body, headers: { "idempotency-key": "hook-secret" } });
    const first = await create();
    expect(first.body.secret).toMatch(/^whsec_/);
    const prisma = await db();
    const stored = await prisma.idempotencyRecord.findMany({ where: { accountId: f.accountId } });
    expect(stored).toHaveLength(1);
    expect(JSON.stringify(stored[0]!.responseBody)).not.toContain(first.body.secret);
    expect(JSON.stringify(stored[0]!.responseBody)).not.toContain("whsec_");

    const replay = await create();
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.body).toMatchObject({ id: first.body.id, secret: first.body.secret });

    const rotate = () => call("POST", "/v1/webhooks/rotate-secret", { key: f.key, body: { id: first.body.id }, headers: { "idempotency-key": "rotate-1" } });
    const rotated = await rotate();
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(first.body.secret);
    const rotatedAgain = await rotate();
    expect(rotatedAgain.headers.get("idempotent-replayed")).toBe("true");
    expect(rotatedAgain.body.secret).toBe(rotated.body.secret);
    // The create's secret is no longer the webhook's: its replay shows the webhook without one.
    const stale = await create();
    expect(stale.headers.get("idempotent-replayed")).toBe("true");
    expect(stale.body.id).toBe(first.body.id);
    expect(stale.body).not.toHaveProperty("secret");
    const records = await prisma.idempotencyRecord.findMany({ where: { accountId: f.accountId } });
    for (const r of records) expect(JSON.stringify(r.responseBody)).not.toContain("whsec_");
  });

  it("expired records are swept after 24 hours", async () => {
    const f = await makeAccount();
    await send(f.key, "key-sweep", { line: f.line.handle, from: phone(), text: "swept" });
    const prisma = await db();
    expect(await deleteExpiredIdempotencyRecords(new Date(Date.now() + IDEMPOTENCY_TTL_MS - 60_000))).toBe(0);
    expect(await prisma.idempotencyRecord.count({ where: { accountId: f.accountId } })).toBe(1);
    expect(await deleteExpiredIdempotencyRecords(new Date(Date.now() + IDEMPOTENCY_TTL_MS + 1_000))).toBeGreaterThan(0);
    expect(await prisma.idempotencyRecord.count({ where: { accountId: f.accountId } })).toBe(0);
  });
});

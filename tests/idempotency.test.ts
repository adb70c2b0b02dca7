import { describe, expect, it } from "vitest";
import { call, db, get, makeAccount, phone } from "./helpers";

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

  it("keys are per account, and must be printable ASCII", async () => {
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
});

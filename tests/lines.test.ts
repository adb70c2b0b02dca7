import { describe, expect, it } from "vitest";
import { newId } from "@/server/ids";
import { db, get, makeAccount, phone } from "./helpers";

// Lines as their owner sees them: the list is current, whichever process wrote the line.

describe("GET /v1/lines", () => {
  it("shows a line another process created at once, not after the key cache expires", async () => {
    const f = await makeAccount();
    const before = await get("/v1/lines", f.key);
    expect(before.status).toBe(200);
    // What the operator CLI or another instance does: a row written behind this process's caches.
    const handle = phone();
    const created = await (await db()).line.create({ data: { id: newId("line"), accountId: f.accountId, handle, service: "sms" } });
    const after = await get("/v1/lines", f.key);
    expect(after.status).toBe(200);
    expect(after.body.data.map((l: { id: string }) => l.id)).toContain(created.id);
    // And a change made there (deactivation) shows too.
    await (await db()).line.update({ where: { id: created.id }, data: { isActive: false } });
    const changed = await get("/v1/lines", f.key);
    expect(changed.body.data.find((l: { id: string }) => l.id === created.id)).toMatchObject({ handle, is_active: false });
  });
});

import pg from "pg";
import { describe, expect, it, vi } from "vitest";
import { get, inbound, makeAccount, phone } from "../../tests/helpers";
import { accountVersion, startChangeListener } from "./changes";

const q = encodeURIComponent;

describe("read cache invalidation", () => {
  it("a read after a write sees the write (lists are served from cache only while unchanged)", async () => {
    const f = await makeAccount();
    const alice = phone();
    await inbound(f, alice, "first");
    const path = `/v1/messages?from=${q(f.line.handle)}`;
    expect((await get(path, f.key)).body.data).toHaveLength(1);
    expect((await get(path, f.key)).body.data).toHaveLength(1);
    await inbound(f, alice, "second");
    expect((await get(path, f.key)).body.data.map((m: { text: string }) => m.text)).toEqual(["second", "first"]);
    const chats = `/v1/chats?from=${q(f.line.handle)}`;
    expect((await get(chats, f.key)).body.data).toHaveLength(1);
    await inbound(f, phone(), "new chat");
    expect((await get(chats, f.key)).body.data).toHaveLength(2);
    const { createLine } = await import("@/server/services/lines/lines");
    const before = (await get("/v1/lines", f.key)).body.data.length;
    await createLine({ accountId: f.accountId, handle: phone() });
    expect((await get("/v1/lines", f.key)).body.data.length).toBe(before + 1);
  });

  it.runIf(!!process.env.DATABASE_URL)("a change NOTIFYed by another instance invalidates this one", async () => {
    await startChangeListener();
    const before = accountVersion("acct_other_instance");
    const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await client.connect();
    await client.query(`SELECT pg_notify('relay_changes', 'acct_other_instance')`);
    await client.end();
    await vi.waitFor(() => expect(accountVersion("acct_other_instance")).not.toBe(before), { timeout: 5000 });
  });
});

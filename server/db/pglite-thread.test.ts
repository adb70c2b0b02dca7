import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { messages, PGlite } from "@electric-sql/pglite";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PGliteThread } from "./pglite-thread";
import { startQueuedSocket } from "./socket-queue";

// PGliteThread must answer exactly as PGlite in the same thread: same values and types, same
// errors, same transaction isolation from statements outside the transaction.

// Embedded PGlite only, whatever DATABASE_URL says: the PGlite run of the suite covers it.
describe.skipIf(!!process.env.DATABASE_URL)("PGlite on its own thread", () => {
  let thread: PGliteThread;
  let local: PGlite;
  beforeAll(async () => {
    [thread, local] = await Promise.all([PGliteThread.create(), PGlite.create()]);
    for (const db of [thread, local]) {
      await db.exec(`CREATE TYPE mood AS ENUM ('ok', 'meh');
        CREATE TABLE t (id text PRIMARY KEY, n int, big bigint, payload jsonb, at timestamptz, tags text[], m mood, raw bytea, ok boolean, f float8)`);
    }
  });
  afterAll(async () => {
    await thread.close();
    await local.close();
  });

  it("returns the values PGlite returns, in object and array row modes, with custom parsers", async () => {
    const params = ["a", 1, "9007199254740993", JSON.stringify({ x: [1, "two"] }), new Date("2026-01-02T03:04:05.678Z"), ["p", "q,r", 'quote"d'], "meh", new Uint8Array([0, 1, 255]), true, 1.5];
    const insert = "INSERT INTO t VALUES ($1, $2, $3, $4::jsonb, $5, $6, $7, $8, $9, $10)";
    await thread.query(insert, params);
    await local.query(insert, params);
    const select = "SELECT *, NULL::int AS nothing, ARRAY[1,2]::int4[] AS ints FROM t";
    const [a, b] = [await thread.query(select), await local.query(select)];
    expect(a.rows).toEqual(b.rows);
    expect(a.fields).toEqual(b.fields);
    expect(a.rows[0]).toMatchObject({ n: 1, payload: { x: [1, "two"] }, tags: ["p", "q,r", 'quote"d'], m: "meh", ok: true, f: 1.5, ints: [1, 2] });
    expect((a.rows[0] as { at: Date }).at).toBeInstanceOf(Date);
    const options = { rowMode: "array" as const, parsers: { 23: (v: string) => `int:${v}` } };
    const [c, d] = [await thread.query(select, [], options), await local.query(select, [], options)];
    expect(c.rows).toEqual(d.rows);
    expect((c.rows[0] as unknown[])[1]).toBe("int:1");
    const update = "UPDATE t SET n = n + 1";
    expect((await thread.query(update)).affectedRows).toBe((await local.query(update)).affectedRows);
    expect((await thread.exec("SELECT 1 AS one; SELECT 'x' AS two")).map((r) => r.rows)).toEqual([[{ one: 1 }], [{ two: "x" }]]);
  });

  it("throws PGlite's DatabaseError with the SQLSTATE code", async () => {
    const err = await thread.query("INSERT INTO t (id) VALUES ($1)", ["a"]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(messages.DatabaseError);
    expect(err).toMatchObject({ code: "23505", constraint: "t_pkey", table: "t" });
    await expect(thread.query("SELECT * FROM nowhere")).rejects.toMatchObject({ code: "42P01" });
    // The thread is still usable after errors.
    expect((await thread.query("SELECT count(*)::int AS n FROM t")).rows).toEqual([{ n: 1 }]);
  });

  it("rolls back a transaction that throws, and keeps other statements out of an open one", async () => {
    await expect(
      thread.transaction(async (tx) => {
        await tx.query("INSERT INTO t (id) VALUES ('b')");
        await tx.query("INSERT INTO t (id) VALUES ('a')"); // duplicate: the whole transaction goes
      }),
    ).rejects.toMatchObject({ code: "23505" });
    expect((await thread.query("SELECT id FROM t ORDER BY id")).rows).toEqual([{ id: "a" }]);

    const order: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const tx = thread.transaction(async (t) => {
      await t.query("INSERT INTO t (id) VALUES ('c')");
      order.push("tx wrote");
      await held;
      await t.rollback();
      order.push("tx rolled back");
    });
    await new Promise((r) => setTimeout(r, 20));
    const outside = thread.query("SELECT count(*)::int AS n FROM t").then((r) => {
      order.push("outside read");
      return r.rows;
    });
    await new Promise((r) => setTimeout(r, 50));
    release();
    await tx;
    expect(await outside).toEqual([{ n: 1 }]);
    expect(order).toEqual(["tx wrote", "tx rolled back", "outside read"]);
  });

  it("answers concurrent statements each with its own result", async () => {
    const results = await Promise.all(Array.from({ length: 200 }, (_, i) => thread.query<{ v: number }>("SELECT $1::int * 2 AS v", [i])));
    expect(results.map((r) => r.rows[0]!.v)).toEqual(Array.from({ length: 200 }, (_, i) => i * 2));
  });

  it("serves a wire-protocol client (the operator CLI) while the app runs its own statements", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "relay-sock-"));
    const socket = await startQueuedSocket(thread, path.join(dir, "run"));
    const client = new pg.Client({ host: socket.host, port: socket.port, user: "postgres", database: "postgres" });
    try {
      await client.connect();
      let appRunning = true;
      const app = (async () => {
        let n = 0;
        while (appRunning) n += (await thread.query<{ v: number }>("SELECT $1::int + $2::int AS v", [1, 1])).rows[0]!.v;
        return n;
      })();
      // Extended-protocol statements with other parameter counts, and an explicit transaction:
      // an app statement slipped between their messages would break them.
      for (let i = 0; i < 30; i++) {
        const { rows } = await client.query("SELECT $1::int + $2::int + $3::int + $4::int + $5::int AS v", [i, 1, 1, 1, 1]);
        expect(rows[0].v).toBe(i + 4);
      }
      await client.query("BEGIN");
      await client.query("INSERT INTO t (id) VALUES ($1)", ["from-socket"]);
      const events: string[] = [];
      const inside = thread.query<{ n: number }>("SELECT count(*)::int AS n FROM t WHERE id = 'from-socket'").then((r) => {
        events.push("app read");
        return r.rows[0]!.n;
      });
      await new Promise((r) => setTimeout(r, 100));
      events.push("client rolls back");
      await client.query("ROLLBACK");
      appRunning = false;
      expect(await app).toBeGreaterThan(0);
      // The app's statement waited for the client's transaction to end: it saw no uncommitted row.
      expect(await inside).toBe(0);
      expect(events).toEqual(["client rolls back", "app read"]);
    } finally {
      await client.end().catch(() => undefined);
      await socket.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("fails every call once closed", async () => {
    const db = await PGliteThread.create();
    await db.close();
    await expect(db.query("SELECT 1")).rejects.toThrow(/closed|exited/);
  });
});

import { describe, expect, it } from "vitest";
import { CHORES } from "../engine/chores";
import { database, sql } from "./index";
import { checkpointIfDue, maintainIfDue, walSinceCheckpoint } from "./wal";

// Embedded PGlite never checkpoints by itself (no checkpointer, and a standalone backend never
// asks for one), so its WAL grew until writes hung. The chore checkpoints once enough was written.

describe("the embedded database's checkpoint chore", () => {
  it("is one of the chores", () => {
    expect(CHORES.map((c) => c.id)).toContain("checkpoint-embedded-database");
  });

  it("checkpoints PGlite once enough WAL was written since the last checkpoint, and does nothing on PostgreSQL", async () => {
    const { kind } = await database();
    await sql(`CREATE TABLE wal_filler (id serial PRIMARY KEY, v text)`);
    // About 4 MB of WAL.
    await sql(`INSERT INTO wal_filler (v) SELECT repeat(md5(g::text), 8) FROM generate_series(1, 12000) g`);
    if (kind === "postgres") {
      expect(await checkpointIfDue(1)).toBe(0); // PostgreSQL's own checkpointer does it
      return;
    }
    const before = await walSinceCheckpoint();
    expect(before).toBeGreaterThan(2 * 1024 * 1024);
    expect(await checkpointIfDue(before * 2)).toBe(0); // not enough yet
    expect(await checkpointIfDue(1024 * 1024)).toBe(1);
    const after = await walSinceCheckpoint();
    expect(after).toBeLessThan(64 * 1024);
    expect(await checkpointIfDue(1024 * 1024)).toBe(0); // nothing written since
    // The data survived the checkpoint.
    expect((await sql<{ n: number }>(`SELECT count(*)::int AS n FROM wal_filler`))[0]?.n).toBe(12000);
  });
});

describe("the embedded database's maintenance chore", () => {
  it("vacuums and analyzes every table of PGlite once enough was written, so the planner knows a big held backlog; nothing on PostgreSQL", async () => {
    expect(CHORES.map((c) => c.id)).toContain("maintain-embedded-database");
    const { kind } = await database();
    expect(await maintainIfDue(1)).toBe(0); // the first call notes where the WAL is
    await sql(`CREATE TABLE held_filler (id serial PRIMARY KEY, status text, due timestamptz)`);
    await sql(`CREATE INDEX held_filler_status ON held_filler (status, due)`);
    await sql(`INSERT INTO held_filler (status, due) SELECT 'held', now() + interval '1 day' FROM generate_series(1, 20000) g`);
    if (kind === "postgres") {
      expect(await maintainIfDue(1)).toBe(0); // PostgreSQL's autovacuum does it
      return;
    }
    expect(await maintainIfDue(512 * 1024 * 1024)).toBe(0); // not enough yet
    expect(await maintainIfDue(1024 * 1024)).toBeGreaterThan(1);
    const [stats] = await sql<{ live: number; analyzed: Date | null; vacuumed: Date | null }>(
      `SELECT n_live_tup::int AS live, last_analyze AS analyzed, last_vacuum AS vacuumed FROM pg_stat_user_tables WHERE relname = 'held_filler'`,
    );
    expect(stats).toMatchObject({ live: 20000, analyzed: expect.any(Date), vacuumed: expect.any(Date) });
    // With statistics, the planner knows every row is held.
    const [plan] = await sql<{ "QUERY PLAN": string }>(`EXPLAIN SELECT * FROM held_filler WHERE status = 'held'`);
    expect(plan!["QUERY PLAN"]).toMatch(/rows=(19|20)\d{3}/);
    expect(await maintainIfDue(1024 * 1024)).toBe(0); // nothing written since
  });
});

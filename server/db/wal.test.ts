import { describe, expect, it } from "vitest";
import { CHORES } from "../engine/chores";
import { database, sql } from "./index";
import { checkpointIfDue, walSinceCheckpoint } from "./wal";

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

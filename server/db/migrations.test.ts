import { PGlite } from "@electric-sql/pglite";
import { describe, expect, it } from "vitest";
import { applyMigrations, readMigrations } from "./migrations";
import { pgliteRunner } from "./runners";
import { pendingSchemaSql } from "./schema-diff";

// On in-memory PGlite instances of its own, whatever DATABASE_URL says: the PGlite run of the
// suite covers it (on PostgreSQL, every test file's setup applies the migrations to a new schema).
describe.skipIf(!!process.env.DATABASE_URL)("migrations", () => {
  it("apply once, record Prisma-compatible rows, and are a no-op the second time", async () => {
    const db = await PGlite.create();
    const files = await readMigrations();
    expect(files.length).toBeGreaterThan(0);
    expect(await applyMigrations(pgliteRunner(db), files)).toEqual(files.map((f) => f.name));
    expect(await applyMigrations(pgliteRunner(db), files)).toEqual([]);
    const rows = await db.query<{ migration_name: string; checksum: string; finished_at: Date | null }>(
      `SELECT migration_name, checksum, finished_at FROM "_prisma_migrations" ORDER BY migration_name`,
    );
    expect(rows.rows.map((r) => r.migration_name)).toEqual(files.map((f) => f.name));
    expect(rows.rows.every((r, i) => r.checksum === files[i]!.checksum && r.finished_at !== null)).toBe(true);
    await db.close();
  });

  it("a failing migration is rolled back and reported", async () => {
    const db = await PGlite.create();
    await expect(
      applyMigrations(pgliteRunner(db), [{ name: "0001_bad", sql: "CREATE TABLE ok (id int); SELECT * FROM missing;", checksum: "x" }]),
    ).rejects.toThrow(/0001_bad failed/);
    const tables = await db.query(`SELECT 1 FROM information_schema.tables WHERE table_name = 'ok'`);
    expect(tables.rows).toHaveLength(0);
    await db.close();
  });

  it("prisma/migrations matches prisma/schema.prisma (run npm run db:migrate -- --name X after a schema change)", async () => {
    expect(await pendingSchemaSql()).toBe("");
  }, 60_000);
});

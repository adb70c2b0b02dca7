import { createHash, randomUUID } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { log } from "../kernel/log";

// Records in Prisma's own `_prisma_migrations` (same checksums), so `prisma migrate deploy` stays
// compatible; needs no engine binary.

export interface SqlRunner {
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  exec(script: string): Promise<void>;
  /** Serialises concurrent migrators (several app instances starting at once). */
  lock?(): Promise<void>;
  unlock?(): Promise<void>;
}

export interface MigrationFile {
  name: string;
  sql: string;
  checksum: string;
}

export const MIGRATIONS_DIR = path.resolve(process.cwd(), "prisma", "migrations");

export async function readMigrations(dir = MIGRATIONS_DIR): Promise<MigrationFile[]> {
  const entries = await readdir(/*turbopackIgnore: true*/ dir, { withFileTypes: true });
  const names = entries.filter((e) => e.isDirectory()).map((e) => e.name).sort();
  return Promise.all(
    names.map(async (name) => {
      const sql = await readFile(/*turbopackIgnore: true*/ path.join(dir, name, "migration.sql"), "utf8");
      return { name, sql, checksum: createHash("sha256").update(sql).digest("hex") };
    }),
  );
}

const CREATE_TABLE = `CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
  "id" VARCHAR(36) PRIMARY KEY NOT NULL,
  "checksum" VARCHAR(64) NOT NULL,
  "finished_at" TIMESTAMPTZ,
  "migration_name" VARCHAR(255) NOT NULL,
  "logs" TEXT,
  "rolled_back_at" TIMESTAMPTZ,
  "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(),
  "applied_steps_count" INTEGER NOT NULL DEFAULT 0
)`;

export async function applyMigrations(db: SqlRunner, migrations?: MigrationFile[]): Promise<string[]> {
  const files = migrations ?? (await readMigrations());
  await db.lock?.();
  try {
    await db.exec(CREATE_TABLE);
    const rows = await db.query<{ migration_name: string; checksum: string; finished_at: unknown }>(
      `SELECT migration_name, checksum, finished_at FROM "_prisma_migrations" WHERE rolled_back_at IS NULL`,
    );
    const applied = new Map(rows.map((r) => [r.migration_name, r]));
    const done: string[] = [];
    for (const file of files) {
      const row = applied.get(file.name);
      if (row) {
        if (!row.finished_at) {
          throw new Error(`Migration ${file.name} failed earlier and was not rolled back; fix the database by hand.`);
        }
        if (row.checksum !== file.checksum) {
          log().warn({ migration: file.name }, "a migration was edited after it was applied (checksum differs)");
        }
        continue;
      }
      const id = randomUUID();
      await db.exec("BEGIN");
      try {
        await db.exec(file.sql);
        await db.query(
          `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at, finished_at, applied_steps_count)
           VALUES ($1, $2, $3, now(), now(), 1)`,
          [id, file.checksum, file.name],
        );
        await db.exec("COMMIT");
      } catch (err) {
        await db.exec("ROLLBACK");
        throw new Error(`Migration ${file.name} failed: ${(err as Error).message}`, { cause: err });
      }
      done.push(file.name);
    }
    return done;
  } finally {
    await db.unlock?.();
  }
}

import type { EmbeddedPg } from "./pglite-thread";
import pg from "pg";
import type { SqlRunner } from "./migrations";

const MIGRATION_LOCK_KEY = 72707369; // the key Prisma's own migrate uses

export function pgliteRunner(db: EmbeddedPg): SqlRunner {
  return {
    async query<T>(sql: string, params?: unknown[]) {
      return (await db.query(sql, params)).rows as T[];
    },
    async exec(script: string) {
      await db.exec(script);
    },
  };
}

/** A runner on one dedicated connection, with the schema created and put on the search path. */
export async function pgRunner(connectionString: string, schema: string): Promise<SqlRunner & { close(): Promise<void> }> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
  await client.query(`SET search_path TO "${schema}"`);
  return {
    async query<T>(sql: string, params?: unknown[]) {
      return (await client.query(sql, params)).rows as T[];
    },
    async exec(script: string) {
      await client.query(script);
    },
    async lock() {
      await client.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK_KEY]);
    },
    async unlock() {
      await client.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK_KEY]);
    },
    close: () => client.end(),
  };
}

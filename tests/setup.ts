import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, inject } from "vitest";
import { resetConfig } from "@/server/kernel/config";
import { closeDatabase, database, seedMemoryDatabases } from "@/server/db";

Object.assign(process.env, { NODE_ENV: "test" });
process.env.PUBLIC_URL = "http://localhost:3000";
// The provider fakes listen on 127.0.0.1: tests reach them as an operator with a Mac or phone on
// the LAN does. The provider address guard's own tests turn this off.
process.env.PROVIDER_ALLOW_PRIVATE = "true";
if (process.env.DATABASE_URL) {
  process.env.DATABASE_SCHEMA = `test_${randomBytes(6).toString("hex")}`;
  process.env.DATABASE_POOL_SIZE = "5";
} else {
  process.env.DATA_DIR = ":memory:";
  seedMemoryDatabases(inject("pgliteSeed") ?? undefined);
}
resetConfig();

// Open (and migrate) the database before the first test, so start-up time, which is seconds
// for PGlite on a busy machine, never counts against a test's own timeout.
beforeAll(async () => {
  await database();
});

afterAll(async () => {
  await closeDatabase();
  const url = process.env.DATABASE_URL;
  const schema = process.env.DATABASE_SCHEMA;
  if (url && schema?.startsWith("test_")) {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await client.end();
  }
});

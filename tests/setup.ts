import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, inject } from "vitest";
import { resetConfig } from "@/server/kernel/config";
import { closeDatabase, database, seedMemoryDatabases } from "@/server/db";

Object.assign(process.env, { NODE_ENV: "test" });
process.env.PUBLIC_URL = "http://localhost:3000";
// The provider fakes listen on 127.0.0.1: tests reach them as an operator with a Mac or phone on
// the LAN does. The provider address guard's own tests turn this off.
process.env.PROVIDER_ALLOW_PRIVATE = "true";
/** On PostgreSQL, this file's DATA_DIR, removed after its tests. */
let ownDataDir: string | undefined;
if (process.env.DATABASE_URL) {
  process.env.DATABASE_SCHEMA = `test_${randomBytes(6).toString("hex")}`;
  process.env.DATABASE_POOL_SIZE = "5";
  // A DATA_DIR of the file's own (stored files, the server marker): under the default ./data,
  // files running side by side, and any server started in this folder, saw each other's marker
  // (the operator CLI then took another file's server for this one's).
  ownDataDir = mkdtempSync(path.join(inject("dataRoot") ?? tmpdir(), "file-"));
  process.env.DATA_DIR = ownDataDir;
} else {
  process.env.DATA_DIR = ":memory:";
  seedMemoryDatabases(inject("pgliteSeed") ?? undefined);
}
resetConfig();

const DB_MODULE = path.resolve("server/db/index.ts");
const THIS_FILE = path.resolve("tests/setup.ts");

/**
 * Whether the test file imports, itself or through its imports, a module that imports
 * server/db (this file aside). Read from the module runner's graph once the file is imported;
 * where that graph cannot be read, the answer is yes.
 */
function importsDatabase(): boolean {
  type Node = { importers: Set<string> };
  const worker = (globalThis as { __vitest_worker__?: { evaluatedModules?: { fileToModulesMap?: Map<string, Set<Node>> } } }).__vitest_worker__;
  const nodes = worker?.evaluatedModules?.fileToModulesMap?.get(DB_MODULE);
  if (!nodes) return true;
  return [...nodes].some((node) => [...node.importers].some((id) => id.split("?")[0] !== THIS_FILE));
}

// Open (and migrate) the database before the first test, so start-up time, which is seconds
// for PGlite on a busy machine, never counts against a test's own timeout. A file whose imports
// never reach the database skips it: an embedded database costs a file about a second of CPU
// (PGlite's WebAssembly and the seed), and a third of the files never use one. Should such a
// file still reach it (a dynamic import), it opens then, as in the server.
beforeAll(async () => {
  if (importsDatabase()) await database();
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
  if (ownDataDir) rmSync(ownDataDir, { recursive: true, force: true });
});

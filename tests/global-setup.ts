import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { PGlite } from "@electric-sql/pglite";
import type { TestProject } from "vitest/node";
import { applyMigrations } from "../server/db/migrations";
import { pgliteRunner } from "../server/db/runners";

// Once per run, on embedded PGlite: a migrated in-memory database dumped to a tar file, from
// which every test file's database starts (tests/setup.ts, seedMemoryDatabases). PGlite's
// initdb costs seconds per file on a busy machine; loading this costs a fraction of that, and
// each file still gets a database of its own. The migrations themselves run here, from the
// files in prisma/migrations, and again (finding themselves applied) in each file.

declare module "vitest" {
  export interface ProvidedContext {
    /** The seed's path, or null on PostgreSQL (each file gets its own schema there). */
    pgliteSeed: string | null;
  }
}

export default async function setup(project: TestProject) {
  if (process.env.DATABASE_URL) {
    project.provide("pgliteSeed", null);
    return;
  }
  const dir = await mkdtemp(path.join(tmpdir(), "relay-test-seed-"));
  const db = await PGlite.create();
  try {
    await applyMigrations(pgliteRunner(db));
    const file = path.join(dir, "migrated.tar");
    await writeFile(file, new Uint8Array(await (await db.dumpDataDir("none")).arrayBuffer()));
    project.provide("pgliteSeed", file);
  } finally {
    await db.close();
  }
  return () => rm(dir, { recursive: true, force: true });
}

import { copyFile, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { PGlite } from "@electric-sql/pglite";
import type { TestProject } from "vitest/node";
import { applyMigrations } from "../server/db/migrations";
import { pgliteRunner } from "../server/db/runners";
import { writeGeneratedClient } from "../scripts/generate-client";

// Once per run:
// - packages/client/src/generated.ts, written again if an operation's declaration changed;
// - the operator CLI bundled as the standalone tree ships it (deploy/bundle-admin.mjs), for the
//   tests that run it as a process: a bundle starts in 0.8 s, `tsx scripts/admin.ts` in 1.3 s,
//   and the e2e suites still run the latter;
// - on embedded PGlite, a migrated in-memory database dumped to a tar file, from
// which every test file's database starts (tests/setup.ts, seedMemoryDatabases). PGlite's
// initdb costs seconds per file on a busy machine; loading this costs a fraction of that, and
// each file still gets a database of its own. The migrations themselves run here, from the
// files in prisma/migrations, and again (finding themselves applied) in each file.

declare module "vitest" {
  export interface ProvidedContext {
    /** The seed's path, or null on PostgreSQL (each file gets its own schema there). */
    pgliteSeed: string | null;
    /** The bundled operator CLI: run it with `node`. */
    adminBundle: string;
    /** On PostgreSQL, the folder each file's DATA_DIR is made in (tests/setup.ts), removed after the run; null on PGlite. */
    dataRoot: string | null;
  }
}

export default async function setup(project: TestProject) {
  // The client library's types follow the operations' declarations (never committed).
  writeGeneratedClient();
  // Inside node_modules, so that the packages it keeps external resolve.
  const cache = path.resolve("node_modules", ".cache");
  await mkdir(cache, { recursive: true });
  const bundleDir = await mkdtemp(path.join(cache, "relay-admin-"));
  const { bundleAdmin } = await import("../deploy/bundle-admin.mjs");
  // Laid out as in the standalone tree: scripts/admin.mjs, and the package.json it reads its version from.
  await bundleAdmin(process.cwd(), path.join(bundleDir, "scripts", "admin.mjs"));
  await copyFile("package.json", path.join(bundleDir, "package.json"));
  project.provide("adminBundle", path.join(bundleDir, "scripts", "admin.mjs"));
  const removeBundle = () => rm(bundleDir, { recursive: true, force: true });
  if (process.env.DATABASE_URL) {
    project.provide("pgliteSeed", null);
    // Here, not in each file's teardown: a file whose tests are all skipped runs no afterAll.
    const dataRoot = await mkdtemp(path.join(tmpdir(), "relay-test-data-"));
    project.provide("dataRoot", dataRoot);
    return async () => {
      await removeBundle();
      await rm(dataRoot, { recursive: true, force: true });
    };
  }
  project.provide("dataRoot", null);
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
  return async () => {
    await removeBundle();
    await rm(dir, { recursive: true, force: true });
  };
}

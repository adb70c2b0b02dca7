// Completes the standalone server that `next build` writes to .next/standalone (output:
// "standalone" in next.config.mjs) into a tree that runs on its own, with no other node_modules:
//   - removes what Next's tracer copies that is no part of the server: the storage, credentials
//     and socket code derive file paths from DATA_DIR, unknown at build time, so the tracer copies
//     every repository file whose path could match, i.e. a development run's ./data (database,
//     credentials.key, uploaded files) and a few source files under a "files" folder;
//   - .next/static (the browser's assets) and public/, which Next leaves to the deployer;
//   - scripts/start.mjs, the production server `npm start` runs (Next's handler behind the fast
//     routes of server/transports/http/fast-routes.ts), which the tree's package.json and the image run
//     instead of Next's server.js;
//   - the operator CLI, bundled into scripts/admin.mjs, and a package.json whose `npm run -s admin`
//     runs it (so `docker compose exec relay npm run -s admin -- key create ...` works);
//   - checks that what the server reads at run time is there (migrations, PGlite's WebAssembly,
//     the Prisma runtime), so a tracer miss fails the build instead of the first start.
//
//   node deploy/prepare-standalone.mjs              completes .next/standalone in place
//   node deploy/prepare-standalone.mjs --out DIR    copies it to DIR (replaced) and completes that
//
// The Dockerfile runs the first form; e2e/standalone.e2e.test.ts the second, outside the
// repository, so a module missing from the tree cannot be found in the repository's node_modules.
import { cp, mkdir, readdir, readFile, rm, rmdir, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { bundleAdmin } from "./bundle-admin.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const built = path.join(root, ".next", "standalone");
const { values } = parseArgs({ options: { out: { type: "string" } } });
const out = values.out ? path.resolve(values.out) : built;

const exists = (p) => stat(p).then(() => true, () => false);
function fail(message) {
  console.error(`prepare-standalone: ${message}`);
  process.exit(1);
}

if (!(await exists(path.join(built, "server.js")))) fail(`${built}/server.js is missing: run \`npm run build\` first (next.config.mjs must say output: "standalone").`);

if (out !== built) {
  await rm(out, { recursive: true, force: true });
  await cp(built, out, { recursive: true, verbatimSymlinks: true });
}
// Set once the tree is prepared: run again in place (no new build), ./data may be a server's own.
const marker = path.join(out, ".next", "prepared-standalone");
const fresh = out !== built || !(await exists(marker));

// 1. Not the server's: the default DATA_DIR's contents, and TypeScript sources (the server runs
// the compiled chunks in .next/server).
if (fresh) await rm(path.join(out, "data"), { recursive: true, force: true });
/** Files and folders of the tree outside node_modules and .next, deepest first. */
async function ownEntries() {
  const entries = [];
  const walk = async (dir) => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (dir === out && (entry.name === "node_modules" || entry.name === ".next")) continue;
      if (entry.isDirectory()) await walk(full);
      entries.push({ full, dir: entry.isDirectory(), name: entry.name });
    }
  };
  await walk(out);
  return entries;
}
for (const entry of fresh ? await ownEntries() : []) {
  if (!entry.dir && /\.tsx?$/.test(entry.name)) await rm(entry.full);
  else if (entry.dir) await rmdir(entry.full).catch(() => undefined); // only when left empty
}
const leaked = fresh ? (await ownEntries()).filter((e) => ["credentials.key", "PG_VERSION", "server.json", "pglite.lock"].includes(e.name)) : [];
if (leaked.length) fail(`data of a development run was copied into the tree; remove it and build again:\n  ${leaked.map((e) => e.full).join("\n  ")}`);

// The production server (npm start's, with its fast routes) in place of Next's server.js.
await mkdir(path.join(out, "scripts"), { recursive: true });
await cp(path.join(root, "scripts", "start.mjs"), path.join(out, "scripts", "start.mjs"));

// 2. Assets Next serves from disk but does not copy.
await rm(path.join(out, ".next", "static"), { recursive: true, force: true });
await cp(path.join(root, ".next", "static"), path.join(out, ".next", "static"), { recursive: true });
if (await exists(path.join(root, "public"))) {
  await rm(path.join(out, "public"), { recursive: true, force: true });
  await cp(path.join(root, "public"), path.join(out, "public"), { recursive: true });
}

// 3. The operator CLI, one file.
const external = await bundleAdmin(root, path.join(out, "scripts", "admin.mjs"));

const pkg = JSON.parse(await readFile(path.join(root, "package.json"), "utf8"));
await writeFile(
  path.join(out, "package.json"),
  `${JSON.stringify(
    {
      name: pkg.name,
      version: pkg.version,
      private: true,
      type: pkg.type,
      engines: pkg.engines,
      scripts: { start: pkg.scripts.start, admin: "node scripts/admin.mjs" },
    },
    null,
    2,
  )}\n`,
);

// 4. What the server and the CLI load at run time.
const missing = [];
const need = async (rel, why) => {
  if (!(await exists(path.join(out, rel)))) missing.push(`${rel} (${why})`);
};
for (const name of external) await need(path.join("node_modules", name, "package.json"), "server external package, also used by the CLI");
await need("node_modules/@electric-sql/pglite/dist/pglite.wasm", "embedded PostgreSQL");
await need("node_modules/@electric-sql/pglite/dist/pglite.data", "embedded PostgreSQL");
await need("node_modules/@prisma/client/runtime/client.js", "Prisma runtime");
const migrations = (await readdir(path.join(root, "prisma", "migrations"), { withFileTypes: true })).filter((e) => e.isDirectory());
for (const m of migrations) await need(path.join("prisma", "migrations", m.name, "migration.sql"), "applied on start");
if (missing.length) fail(`the standalone tree lacks:\n  ${missing.join("\n  ")}\nAdd them to outputFileTracingIncludes in next.config.mjs.`);

await mkdir(path.join(out, ".next", "cache"), { recursive: true });
await writeFile(marker, `${new Date().toISOString()}\n`);
console.log(`prepare-standalone: ${path.relative(process.cwd(), out) || "."} is ready: node server.js; npm run -s admin -- ...`);

// Completes .next/standalone into a tree that runs with no other node_modules (docs/production.md,
// "Standalone server"). `--out DIR` copies it to DIR first: e2e runs it outside the repository, so
// a module missing from the tree cannot be found in the repository's node_modules.
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

// Next's tracer copies every file whose path could match DATA_DIR (unknown at build time), such as
// a development run's ./data; the server runs the compiled chunks, not TypeScript sources.
if (fresh) await rm(path.join(out, "data"), { recursive: true, force: true });
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

await mkdir(path.join(out, "scripts"), { recursive: true });
await cp(path.join(root, "scripts", "start.mjs"), path.join(out, "scripts", "start.mjs"));

await rm(path.join(out, ".next", "static"), { recursive: true, force: true });
await cp(path.join(root, ".next", "static"), path.join(out, ".next", "static"), { recursive: true });
if (await exists(path.join(root, "public"))) {
  await rm(path.join(out, "public"), { recursive: true, force: true });
  await cp(path.join(root, "public"), path.join(out, "public"), { recursive: true });
}

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

// A tracer miss fails here rather than at the first start.
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

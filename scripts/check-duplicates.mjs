// npm run lint:duplicates (docs/development.md, "Shape"): a pair fails unless .duplicates-allow.json allows it.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { productionFiles } from "./production-files.mjs";

const ALLOW_FILE = ".duplicates-allow.json";
const ARGS = ["--most", "200", "--seconds", "120"];

if (spawnSync("duplicates", ["--help"], { stdio: "ignore" }).error) {
  console.log("duplicates is not installed on this machine: repeated code was not checked.");
  process.exit(0);
}

// `duplicates` reads one folder: outside git, every file in it.
const tree = mkdtempSync(path.join(tmpdir(), "duplicates-"));
let rows;
try {
  for (const { file, text } of productionFiles()) {
    mkdirSync(path.join(tree, path.dirname(file)), { recursive: true });
    writeFileSync(path.join(tree, file), text);
  }
  rows = execFileSync("duplicates", ["--repo", tree, ...ARGS], { encoding: "utf8", maxBuffer: 16 << 20 }).split("\n");
} finally {
  rmSync(tree, { recursive: true, force: true });
}

const glob = (pattern) =>
  new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*\*/g, "\0").replace(/\*/g, "[^/]*").replace(/\0/g, ".*")}$`);
const allow = JSON.parse(readFileSync(ALLOW_FILE, "utf8")).map((entry, i) => {
  if (!Array.isArray(entry.files) || entry.files.length !== 2 || typeof entry.why !== "string" || !entry.why.trim()) {
    throw new Error(`${ALLOW_FILE}, entry ${i + 1}: needs "files" (two globs) and "why"`);
  }
  return { ...entry, a: glob(entry.files[0]), b: glob(entry.files[1]), used: false };
});

const failing = [];
const problems = [];
for (const row of rows) {
  const pair = /^D\d+ (\S+):\d+-\d+ ~ (\S+):\d+-\d+/.exec(row);
  if (pair) {
    const [, x, y] = pair;
    const entry = allow.find((e) => (e.a.test(x) && e.b.test(y)) || (e.a.test(y) && e.b.test(x)));
    if (entry) entry.used = true;
    else failing.push(row);
  } else if (/^\(\+\d+ more pairs\)|^incomplete:/.test(row.trim())) problems.push(row.trim());
}

console.log(rows[0]);
for (const row of failing) console.log(row);
for (const line of problems) console.log(`not all pairs were seen: ${line}`);
for (const entry of allow.filter((e) => !e.used)) console.log(`note: ${ALLOW_FILE} allows a pair that is no longer there: ${entry.files.join(" ~ ")}`);
if (failing.length > 0) console.log(`${failing.length} pairs of repeated code: share the code, or allow the pair in ${ALLOW_FILE} with the reason.`);
if (failing.length > 0 || problems.length > 0) process.exit(1);

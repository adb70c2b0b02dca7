#!/usr/bin/env node
// The slowest test files of one or more runs, from the JSON lines tests/timings-reporter.ts
// writes (TEST_TIMINGS_FILE): node scripts/slowest-tests.mjs FILE [COUNT]. CI prints them at the
// end, so the file that makes the suite slow is named without a second run.
import { readFileSync } from "node:fs";

const [file, count = "20"] = process.argv.slice(2);
if (!file) {
  console.error("usage: node scripts/slowest-tests.mjs TIMINGS_FILE [COUNT]");
  process.exit(2);
}
const rows = readFileSync(file, "utf8")
  .split("\n")
  .filter(Boolean)
  .map((line) => JSON.parse(line));
rows.sort((a, b) => b.total_ms - a.total_ms);
const s = (ms) => (ms / 1000).toFixed(1).padStart(6);
console.log(`${"total s".padStart(7)} ${"setup".padStart(6)} ${"import".padStart(6)} ${"tests".padStart(6)}  database    file (tests)`);
for (const r of rows.slice(0, Number(count))) {
  console.log(` ${s(r.total_ms)} ${s(r.setup_ms)} ${s(r.import_ms)} ${s(r.tests_ms)}  ${r.database.padEnd(10)}  ${r.file} (${r.tests})`);
}

// Runs after `npm install`: generates the Prisma client (offline, see prisma-generate.mjs) and
// the client library's types (generate-client.ts), both derived and never committed. Where the
// dev dependencies or the sources are absent (a production image's install), the second is skipped.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

const run = (command, args) => {
  const result = spawnSync(command, args, { stdio: "inherit" });
  if (result.status !== 0) process.exit(result.status ?? 1);
};

run(process.execPath, ["scripts/prisma-generate.mjs"]);
if (existsSync("node_modules/.bin/tsx") && existsSync("scripts/generate-client.ts")) run("node_modules/.bin/tsx", ["scripts/generate-client.ts"]);

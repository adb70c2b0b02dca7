// Generates the Prisma client offline. `prisma generate` only needs the schema engine for
// commands we do not use here, but insists on a path to it: point it at this file so the CLI
// never tries to download the native engine.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const placeholder = fileURLToPath(import.meta.url);
const result = spawnSync("npx", ["prisma", "generate"], {
  stdio: "inherit",
  env: { ...process.env, PRISMA_SCHEMA_ENGINE_BINARY: placeholder, PRISMA_HIDE_UPDATE_MESSAGE: "1", CHECKPOINT_DISABLE: "1" },
});
process.exit(result.status ?? 1);

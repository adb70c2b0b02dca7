import path from "node:path";
import { defineConfig } from "vitest/config";

// Every test file gets its own database: an in-memory PGlite, or (when DATABASE_URL is set)
// its own schema on that PostgreSQL server, dropped afterwards (tests/setup.ts). The in-memory
// ones start from a migrated seed made once per run (tests/global-setup.ts).
export default defineConfig({
  resolve: {
    alias: [
      { find: "@", replacement: path.resolve(import.meta.dirname) },
      // One graphql module for everything: Node loads it as CommonJS for the packages it imports
      // (yoga, Pothos), so source files must not get the ESM build (its classes differ).
      { find: /^graphql$/, replacement: path.resolve(import.meta.dirname, "node_modules/graphql/index.js") },
    ],
  },
  test: {
    environment: "node",
    include: ["server/**/*.test.ts", "tests/**/*.test.ts"],
    globalSetup: ["tests/global-setup.ts"],
    setupFiles: ["tests/setup.ts"],
    // TEST_TIMINGS_FILE: each file's set-up, import and test time, for scripts/slowest-tests.mjs.
    reporters: ["default", "./tests/timings-reporter.ts"],
    pool: "forks",
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // More files at once than cores: a file often waits (timers, spawned CLI and server
    // processes, fakes), and on PostgreSQL the database's work is another process's. Measured on
    // 2 busy cores: PGlite 10m42s with 2 workers, 8m39s with 3; PostgreSQL 6m47s with 2, 5m55s with 4.
    maxWorkers: process.env.DATABASE_URL ? 4 : 3,
  },
});

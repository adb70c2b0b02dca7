import { defineConfig } from "vitest/config";

// Black-box tests against `next start` (needs `npm run build` first): npm run test:e2e.
export default defineConfig({
  test: {
    environment: "node",
    include: ["e2e/**/*.e2e.test.ts"],
    pool: "forks",
    testTimeout: 60_000,
    hookTimeout: 120_000,
    fileParallelism: false,
  },
});

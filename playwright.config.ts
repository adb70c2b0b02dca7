import { defineConfig } from "@playwright/test";

// Dashboard tests in Debian's Chromium (apt-get install chromium; Playwright's own browser
// downloads are not used) against `next start` (run `npm run build` first). Screenshots of each
// main page land in e2e/artifacts/.
export default defineConfig({
  testDir: "e2e",
  testMatch: "**/*.spec.ts",
  outputDir: "e2e/artifacts/results",
  timeout: 120_000,
  expect: { timeout: 15_000 },
  workers: 1,
  reporter: [["list"]],
  use: {
    browserName: "chromium",
    headless: true,
    viewport: { width: 1280, height: 860 },
    actionTimeout: 15_000,
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
      // Without the networking flags Chromium keeps trying to reach the (closed) internet.
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
    },
  },
});

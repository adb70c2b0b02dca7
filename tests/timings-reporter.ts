import { appendFileSync } from "node:fs";
import path from "node:path";
import type { Reporter, TestModule } from "vitest/node";

// Where a run's time goes, file by file: with TEST_TIMINGS_FILE set, each run appends one JSON
// line per test file (its worker's set-up, the import of the file and everything it imports,
// and its tests and hooks), which scripts/slowest-tests.mjs ranks. CI prints the slowest files
// of both runs at the end, so a file that grows slow is seen where it appears.

export default class TimingsReporter implements Reporter {
  onTestRunEnd(modules: readonly TestModule[]): void {
    const file = process.env.TEST_TIMINGS_FILE;
    if (!file) return;
    const database = process.env.DATABASE_URL ? "postgresql" : "pglite";
    const lines = modules.map((m) => {
      const d = m.diagnostic();
      const ms = (n: number) => Math.round(n);
      return JSON.stringify({
        file: path.relative(process.cwd(), m.moduleId),
        database,
        state: m.state(),
        tests: [...m.children.allTests()].length,
        total_ms: ms(d.environmentSetupDuration + d.prepareDuration + d.setupDuration + d.collectDuration + d.duration),
        setup_ms: ms(d.environmentSetupDuration + d.prepareDuration + d.setupDuration),
        import_ms: ms(d.collectDuration),
        tests_ms: ms(d.duration),
      });
    });
    appendFileSync(file, lines.map((l) => `${l}\n`).join(""));
  }
}

import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";

// The client package must stay runnable in browsers and edge runtimes: no node: imports,
// nothing from the server, no dependencies.

const pkg = path.resolve(import.meta.dirname, "../packages/client");

describe("the client library", () => {
  it("imports nothing but its own files, and has no runtime dependencies", () => {
    const manifest = JSON.parse(readFileSync(path.join(pkg, "package.json"), "utf8"));
    expect(manifest.dependencies ?? {}).toEqual({});
    // (src/cli is the Node-only command line: not exported, built separately.)
    for (const file of readdirSync(path.join(pkg, "src")).filter((f) => f.endsWith(".ts"))) {
      const source = readFileSync(path.join(pkg, "src", file), "utf8");
      const specifiers = [...source.matchAll(/(?:from|import)\s*\(?\s*["']([^"']+)["']/g)].map((m) => m[1]);
      expect(specifiers.filter((s) => !s!.startsWith("./")), file).toEqual([]);
      expect(source, file).not.toMatch(/\b(require\(|process\.|Buffer\b)/);
    }
  });

  it("builds with tsc to dist/, with no node: import in the output", () => {
    const outDir = mkdtempSync(path.join(tmpdir(), "relay-client-"));
    try {
      execFileSync(process.execPath, [path.resolve("node_modules/typescript/bin/tsc"), "-p", path.join(pkg, "tsconfig.json"), "--outDir", outDir], { stdio: "pipe" });
      const files = readdirSync(outDir);
      expect(files).toEqual(expect.arrayContaining(["index.js", "index.d.ts", "client.js", "webhooks.js", "generated.d.ts"]));
      for (const file of files.filter((f) => f.endsWith(".js"))) {
        expect(readFileSync(path.join(outDir, file), "utf8"), file).not.toMatch(/["']node:/);
      }
    } finally {
      rmSync(outDir, { recursive: true, force: true });
    }
  });
});

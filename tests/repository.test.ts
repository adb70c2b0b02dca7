import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import satisfies from "semver/functions/satisfies";
import { describe, expect, it } from "vitest";
import { OutboxItemSchema } from "@/server/wire/responses";

// What a new user of a clean clone reads first: the licence, and READMEs that point only at
// things the repository has (no shared design documents, no package that is not on npm).

const root = path.resolve(import.meta.dirname, "..");
const read = (file: string) => readFileSync(path.join(root, file), "utf8");
const READMES = ["README.md", "packages/client/README.md"];
/** Every page of documentation a user of a clean clone may read. */
const DOCS = [...READMES, "bench/README.md", ...readdirSync(path.join(root, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)];

describe("the repository", () => {
  it("is MIT licensed as a whole, and says so in LICENSE, package.json and README", () => {
    const license = read("LICENSE");
    expect(license).toMatch(/^MIT License\n\nCopyright \(c\) 2026 Relay contributors\n/);
    expect(license).toContain("Permission is hereby granted, free of charge");
    expect(read("packages/client/LICENSE")).toBe(license);
    expect(JSON.parse(read("package.json")).license).toBe("MIT");
    expect(JSON.parse(read("packages/client/package.json")).license).toBe("MIT");
    expect(read("README.md")).toMatch(/## License\n\nMIT, for the whole repository[\s\S]*\[LICENSE\]\(LICENSE\)/);
  });

  it("READMEs link only to files in the repository and never to the unpublished package on npm", () => {
    for (const readme of READMES) {
      const text = read(readme);
      expect(text, readme).not.toMatch(/SPEC\.md|COMPAT\.md|DESIGN\.md/);
      expect(text, readme).not.toMatch(/npm (install|i) @relay\/client/);
      for (const [, target] of text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        expect(existsSync(path.join(root, path.dirname(readme), target!)), `${readme} links to ${target}`).toBe(true);
      }
    }
    // How to get the client from this repository instead.
    expect(read("README.md")).toMatch(/npm pack[\s\S]*npm install \/path\/to\/relay-client-0\.1\.0\.tgz/);
    expect(read("packages/client/README.md")).toContain("npm install /path/to/relay/packages/client/relay-client-0.1.0.tgz");
  });

  it("no page of the documentation cites a document the repository does not have, or shows a message search without its line", () => {
    // generated.ts carries the operations' descriptions, as the document /docs renders does.
    for (const page of [...DOCS, "packages/client/src/generated.ts"]) {
      const text = read(page);
      expect(text, page).not.toMatch(/\bSPEC\b|SPEC\.md|COMPAT\.md|DESIGN\.md/);
      // GET /v1/messages needs `from` (the line) beside `query`.
      expect(text, page).not.toMatch(/\/v1\/messages\?query=/);
    }
  });

  it("docs/send-policy.md's table of holds names every hold_reason the API answers", () => {
    const row = read("docs/send-policy.md").split("\n").find((l) => l.startsWith("| `hold_reason` |"))!;
    const reasons = OutboxItemSchema.shape.hold_reason.unwrap().options;
    expect(reasons).toContain("approval");
    for (const reason of reasons) expect(row, reason).toContain(`\`${reason}\``);
  });

  it("installs on Node 20.19 (the oldest that package.json allows) without an engine warning: no locked package asks for a newer Node", () => {
    const lock = JSON.parse(read("package-lock.json")) as { packages: Record<string, { engines?: { node?: string } | string[] }> };
    const minimum = JSON.parse(read("package.json")).engines.node as string;
    expect(minimum).toBe(">=20.19");
    const refusing = Object.entries(lock.packages)
      .map(([where, pkg]) => ({ where, node: Array.isArray(pkg.engines) ? undefined : pkg.engines?.node }))
      .filter((p) => p.node && !satisfies("20.19.0", p.node, { includePrerelease: true }))
      .map((p) => `${p.where} asks for node ${p.node}`);
    expect(refusing).toEqual([]);
  });
});

import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { resetConfig } from "../kernel/config";
import { CREDENTIALS_KEY_FILE, CredentialsError, credentialsKeySource, decryptJson, encryptJson, resetCredentialsKey } from "./credentials";

// Provider credentials at rest: AES-256-GCM under CREDENTIALS_KEY, or under a key generated
// once into DATA_DIR (mode 0600) when it is unset.

const saved = { DATA_DIR: process.env.DATA_DIR, CREDENTIALS_KEY: process.env.CREDENTIALS_KEY };

function use(env: { DATA_DIR?: string; CREDENTIALS_KEY?: string }) {
  process.env.DATA_DIR = env.DATA_DIR ?? ":memory:";
  if (env.CREDENTIALS_KEY === undefined) delete process.env.CREDENTIALS_KEY;
  else process.env.CREDENTIALS_KEY = env.CREDENTIALS_KEY;
  resetConfig();
  resetCredentialsKey();
}

afterEach(() => {
  use({ DATA_DIR: saved.DATA_DIR, CREDENTIALS_KEY: saved.CREDENTIALS_KEY });
});

describe("credentials at rest", () => {
  it("round-trips JSON, and the sealed text shows nothing of it", () => {
    use({ CREDENTIALS_KEY: "k".repeat(40) });
    const sealed = encryptJson({ password: "hunter2-very-secret" });
    expect(sealed).toMatch(/^v1\.[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(sealed).not.toContain("hunter2");
    expect(decryptJson(sealed)).toEqual({ password: "hunter2-very-secret" });
    expect(encryptJson({ a: 1 })).not.toBe(encryptJson({ a: 1 })); // a fresh IV each time
    expect(credentialsKeySource()).toBe("env");
  });

  it("refuses to decrypt under another key, or a tampered value, with a readable error", () => {
    use({ CREDENTIALS_KEY: "a".repeat(40) });
    const sealed = encryptJson({ password: "x" });
    use({ CREDENTIALS_KEY: "b".repeat(40) });
    expect(() => decryptJson(sealed)).toThrow(CredentialsError);
    expect(() => decryptJson(sealed)).toThrow(/CREDENTIALS_KEY/);
    use({ CREDENTIALS_KEY: "a".repeat(40) });
    const parts = sealed.split(".");
    parts[3] = `${parts[3]!.slice(0, -2)}AA`;
    expect(() => decryptJson(parts.join("."))).toThrow(CredentialsError);
    expect(() => decryptJson("not sealed")).toThrow(CredentialsError);
  });

  it("a value sealed with a context decrypts only under that context; one sealed without (v1) still reads", () => {
    use({ CREDENTIALS_KEY: "c".repeat(40) });
    const bound = encryptJson({ password: "x" }, "line-a|bluebubbles|http://mac.lan:1234");
    expect(bound).toMatch(/^v2\./);
    expect(decryptJson(bound, "line-a|bluebubbles|http://mac.lan:1234")).toEqual({ password: "x" });
    expect(() => decryptJson(bound, "line-b|bluebubbles|http://mac.lan:1234")).toThrow(CredentialsError);
    expect(() => decryptJson(bound, "line-a|bluebubbles|http://evil.example")).toThrow(/connect the line again/);
    expect(() => decryptJson(bound)).toThrow(CredentialsError);
    const legacy = encryptJson({ password: "y" });
    expect(legacy).toMatch(/^v1\./);
    expect(decryptJson(legacy, "any context")).toEqual({ password: "y" });
  });

  it("without CREDENTIALS_KEY, generates one key once into DATA_DIR with mode 0600, and keeps using it", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "relay-cred-"));
    try {
      use({ DATA_DIR: dir });
      const sealed = encryptJson({ token: "t" });
      expect(credentialsKeySource()).toBe("generated");
      const file = path.join(dir, CREDENTIALS_KEY_FILE);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const material = readFileSync(file, "utf8");
      use({ DATA_DIR: dir }); // a restart, or the operator CLI on the same DATA_DIR
      expect(decryptJson(sealed)).toEqual({ token: "t" });
      expect(credentialsKeySource()).toBe("file");
      expect(readFileSync(file, "utf8")).toBe(material);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("CREDENTIALS_KEY must be long enough", () => {
    process.env.CREDENTIALS_KEY = "short";
    resetConfig();
    resetCredentialsKey();
    expect(() => encryptJson({})).toThrow(/CREDENTIALS_KEY: must be at least 32 characters/);
  });
});

import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { resetConfig } from "@/server/kernel/config";
import { credentialsKeySource, resetCredentialsKey } from "@/server/db/credentials";
import { closeDatabase, database, sql } from "@/server/db";
import { storage } from "@/server/storage";

// DATA_DIR is private: the directory 0700 and every file in it 0600, for the embedded database,
// credentials.key and uploaded files alike; a directory left world-readable by an older
// version is fixed when the service opens it. This file runs on its own embedded database in a
// temporary DATA_DIR (whatever DATABASE_URL says), set up like an old version left it.

const dir = mkdtempSync(path.join(tmpdir(), "relay-data-"));
chmodSync(dir, 0o755);
mkdirSync(path.join(dir, "files", "old"), { recursive: true, mode: 0o755 });
writeFileSync(path.join(dir, "files", "old", "upload.bin"), "old upload", { mode: 0o644 });
writeFileSync(path.join(dir, "session_secret"), "s3cret", { mode: 0o644 });
delete process.env.DATABASE_URL;
process.env.DATA_DIR = dir;
process.env.CREDENTIALS_KEY = "";
resetConfig();
resetCredentialsKey();

afterAll(async () => {
  await closeDatabase();
  rmSync(dir, { recursive: true, force: true });
});

/** Every directory and file under `root` with a mode other than 0700 / 0600 (sockets and links aside). */
function exposed(root: string): string[] {
  const found: string[] = [];
  const walk = (at: string) => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      const target = path.join(at, entry.name);
      if (entry.isSymbolicLink() || entry.isSocket()) continue;
      const mode = statSync(target).mode & 0o777;
      if (entry.isDirectory()) {
        if (mode !== 0o700) found.push(`${path.relative(root, target)}/ ${mode.toString(8)}`);
        walk(target);
      } else if (mode !== 0o600) found.push(`${path.relative(root, target)} ${mode.toString(8)}`);
    }
  };
  walk(root);
  return found;
}

describe("DATA_DIR", () => {
  it("is 0700 with every file 0600: an old directory is fixed at start, and what the service writes later is private", async () => {
    const db = await database();
    expect(db.kind).toBe("pglite");
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    // The database writes, a provider secret is sealed (credentials.key is generated), a file is uploaded.
    await sql(`CREATE TABLE IF NOT EXISTS mode_probe (n int)`);
    await sql(`INSERT INTO mode_probe SELECT g FROM generate_series(1, 1000) g`);
    expect(credentialsKeySource()).toBe("generated");
    await storage().put("files/new/upload.bin", Buffer.from("new upload"));
    await closeDatabase(); // flushes the embedded database's files
    expect(readdirSync(dir)).toEqual(expect.arrayContaining(["pglite", "credentials.key", "files", "session_secret"]));
    expect(exposed(dir)).toEqual([]);
  });
});

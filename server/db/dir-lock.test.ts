import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { DataDirBusyError, lockDataDir } from "./dir-lock";

describe("PGlite data directory lock", () => {
  it("refuses a second owner while the first lives, and takes over a stale lock", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "relay-lock-"));
    const release = lockDataDir(dir);
    expect(readFileSync(path.join(dir, "pglite.lock"), "utf8")).toBe(String(process.pid));

    // Another live process holds it: simulate with the parent of this process.
    writeFileSync(path.join(dir, "pglite.lock"), String(process.ppid));
    expect(() => lockDataDir(dir)).toThrow(DataDirBusyError);
    expect(() => lockDataDir(dir)).toThrow(/in use by process/);

    // A lock left by a process that is gone is taken over.
    const dead = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" });
    writeFileSync(path.join(dir, "pglite.lock"), dead.stdout);
    const again = lockDataDir(dir);
    expect(readFileSync(path.join(dir, "pglite.lock"), "utf8")).toBe(String(process.pid));
    again();
    expect(existsSync(path.join(dir, "pglite.lock"))).toBe(false);
    release();
    rmSync(dir, { recursive: true, force: true });
  });
});

import { chmodSync, lstatSync, mkdirSync, readdirSync } from "node:fs";
import path from "node:path";
import { isMainThread } from "node:worker_threads";
import { processSingleton } from "../kernel/singleton";

// Only the service's OS user may read DATA_DIR (the database holds the session secret): 0700,
// files 0600, umask 077 for what the database writes later; an older 0755 directory is fixed.

const PRIVATE_DIR_MODE = 0o700;
const PRIVATE_FILE_MODE = 0o600;

const secured = processSingleton("data-dir-secured", () => new Set<string>());

export function secureDataDir(dir: string): number {
  const root = path.resolve(dir);
  if (secured.has(root)) return 0;
  // The worker threads (PGlite's) share the process's umask; only the main thread may set it.
  if (isMainThread) process.umask(0o077);
  mkdirSync(root, { recursive: true, mode: PRIVATE_DIR_MODE });
  let changed = 0;
  const fix = (target: string, mode: number) => {
    const current = lstatSync(target).mode & 0o777;
    if (current !== mode) {
      chmodSync(target, mode);
      changed++;
    }
  };
  fix(root, PRIVATE_DIR_MODE);
  const walk = (at: string) => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      const target = path.join(at, entry.name);
      if (entry.isSymbolicLink()) continue; // never follow a link out of DATA_DIR
      if (entry.isDirectory()) {
        fix(target, PRIVATE_DIR_MODE);
        walk(target);
      } else {
        fix(target, PRIVATE_FILE_MODE);
      }
    }
  };
  walk(root);
  secured.add(root);
  return changed;
}

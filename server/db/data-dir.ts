import { chmodSync, lstatSync, mkdirSync, readdirSync } from "node:fs";
import path from "node:path";
import { isMainThread } from "node:worker_threads";
import { processSingleton } from "../kernel/singleton";

// DATA_DIR holds the embedded database, credentials.key, uploaded files and the database's
// Unix sockets: nobody but the service's own OS user may read any of it (a copy of the
// database holds the session secret). The directory is 0700 and every file in it 0600; a
// directory made by an older version (0755, files 0644) is fixed when the service opens it,
// and the process creates files privately from then on (umask 077), including those the
// embedded database writes later.

const PRIVATE_DIR_MODE = 0o700;
const PRIVATE_FILE_MODE = 0o600;

const secured = processSingleton("data-dir-secured", () => new Set<string>());

/** Makes `dir` (created if missing) and everything in it private; returns how many modes it changed. Once per directory and process. */
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

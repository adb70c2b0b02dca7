import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, inject } from "vitest";

// The operator CLI as an operator runs it: a separate process (the bundle the standalone tree
// ships; the e2e suites run `npm run admin`), results on stdout, errors on stderr.
// On PostgreSQL it shares the test file's schema, so its results are checked through the API.
// On PGlite a separate server process owns the data directory (as `npm run dev` would) and the
// CLI must reach it through the server's Unix socket: useAdminServer() starts it.

export const onPostgres = !!process.env.DATABASE_URL;
export const TSX = path.resolve("node_modules/.bin/tsx");
/** The operator CLI as the standalone tree ships it, bundled once per run (tests/global-setup.ts). */
const ADMIN = inject("adminBundle");
let dataDir = "";
let server: ChildProcess | undefined;

/** The PGlite server's DATA_DIR ("" on PostgreSQL). */
export const serverDataDir = () => dataDir;
/** The CLI's environment: an operator's shell, which has no PUBLIC_URL (the server's is in its marker, or unknown). */
export function env(): NodeJS.ProcessEnv {
  const e: NodeJS.ProcessEnv = { ...process.env, NODE_ENV: "production" };
  delete e.PUBLIC_URL;
  if (!onPostgres) e.DATA_DIR = dataDir;
  else e.CREDENTIALS_KEY = "cli-test-credentials-key-0123456789abcdef"; // no DATA_DIR of its own to generate one in
  return e;
}

export type Run = { code: number; stdout: string; stderr: string };

/** The CLI with env() (or `options.env`), in this repository's folder (or `options.cwd`). */
export function adminIn(options: { env?: NodeJS.ProcessEnv; cwd?: string }, ...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [ADMIN, ...args], { env: options.env ?? env(), cwd: options.cwd, timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

export const admin = (...args: string[]): Promise<Run> => adminIn({}, ...args);

/** The line a write command prints first on stderr: the database it works on (never a password). */
export const USING = onPostgres ? /^using PostgreSQL at [^\n]+\/[^\n]+, data directory [^\n]+\n/ : /^using the embedded database in [^\n]+ \(through the server running on it, pid \d+\)[^\n]*\n/;

/** admin with `input` on its stdin (a pipe, as `cat settings.json | admin ...` gives it). */
export function adminWithStdin(input: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [ADMIN, ...args], { env: env(), timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
    child.stdin!.end(input);
  });
}

/** Starts the PGlite server the CLI goes through (nothing on PostgreSQL), before the file's tests. */
export function useAdminServer(): void {
  beforeAll(async () => {
    if (onPostgres) return;
    dataDir = mkdtempSync(path.join(tmpdir(), "relay-cli-"));
    server = spawn(TSX, ["-e", "import('./server/boot/bootstrap.ts').then((m) => m.bootstrap()).then(() => console.log('ready'))"], {
      env: { ...env(), PUBLIC_URL: "https://relay.example.com" },
      stdio: ["ignore", "pipe", "inherit"],
    });
    await new Promise<void>((resolve, reject) => {
      server!.stdout!.on("data", (d: Buffer) => d.toString().includes("ready") && resolve());
      server!.once("exit", (code) => reject(new Error(`server exited with ${code}`)));
    });
  }, 60_000);

  afterAll(() => {
    server?.kill();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });
}

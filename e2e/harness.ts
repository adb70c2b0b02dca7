import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";

// `npm start` (scripts/start.mjs) as a user runs it (production build, embedded PGlite in a fresh DATA_DIR), on
// a free loopback port, with the operator CLI pointed at the same data.

/** The production server, as `npm start` runs it. */
const START = path.resolve("scripts/start.mjs");
const TSX = path.resolve("node_modules/.bin/tsx");

/** A port nothing listens on at the moment, on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** Polls `url` until it answers 2xx; throws `failure` after `timeoutMs`, or at once if `child` exits. */
export async function waitUntilUp(url: string, child: ChildProcess, failure: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${failure}: it exited (${child.exitCode ?? child.signalCode})`);
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // starting
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(failure);
}

/**
 * SIGTERM, and waits for the exit. A server that does not exit within `timeoutMs` is killed, so
 * nothing is left behind, and this throws `${what} did not exit within N s of SIGTERM`.
 */
export async function stopWithSigterm(child: ChildProcess | undefined, what: string, timeoutMs = 20_000): Promise<{ code: number | null; signal: NodeJS.Signals | null } | null> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return null;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child.once("exit", (code, signal) => r({ code, signal })));
  child.kill("SIGTERM");
  let timer: NodeJS.Timeout | undefined;
  const hung = await Promise.race([exited.then(() => false), new Promise<boolean>((r) => (timer = setTimeout(() => r(true), timeoutMs)))]);
  clearTimeout(timer);
  if (hung) {
    child.kill("SIGKILL");
    await exited;
    throw new Error(`${what} did not exit within ${timeoutMs / 1000} s of SIGTERM`);
  }
  return exited;
}

/** The PostgreSQL server of every machine of this project and of CI (trust auth). */
const POSTGRES_ADMIN_URL = process.env.E2E_POSTGRES_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";

/** A new, empty PostgreSQL database on the local server; drop() removes it (closing its connections). */
export async function freshPostgresDatabase(prefix = "relay_e2e"): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `${prefix}_${randomBytes(6).toString("hex")}`;
  const run = async (statement: string) => {
    const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
    try {
      await client.connect();
    } catch (err) {
      throw new Error(`PostgreSQL is not reachable at ${POSTGRES_ADMIN_URL} (set E2E_POSTGRES_URL): ${(err as Error).message}`, { cause: err });
    }
    try {
      await client.query(statement);
    } finally {
      await client.end();
    }
  };
  await run(`CREATE DATABASE "${name}"`);
  const url = new URL(POSTGRES_ADMIN_URL);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => run(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`) };
}

export interface TestServer {
  base: string;
  env: NodeJS.ProcessEnv;
  /** The running process (replaced by start()). */
  process(): ChildProcess;
  start(): Promise<void>;
  /** SIGTERM, and wait for the exit (fails if it takes over 20 s). */
  stop(): Promise<void>;
  /** Stops the server and deletes its data. */
  dispose(): Promise<void>;
  /** Runs the operator CLI against the server's data; returns its stdout. */
  admin(...args: string[]): string;
  /** The same without blocking this process: its pooled keep-alive connections see the server close them meanwhile. */
  adminAsync(...args: string[]): Promise<string>;
}

export async function testServer(extraEnv: Record<string, string> = {}): Promise<TestServer> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const dataDir = mkdtempSync(path.join(tmpdir(), "relay-e2e-"));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_ENV: "production" as const,
    // The e2e suites drive the other phone through the simulator, off by default in production.
    SIMULATOR_ENABLED: "true",
    NEXT_TELEMETRY_DISABLED: "1",
    DATA_DIR: dataDir,
    PUBLIC_URL: base,
    PORT: String(port),
    ...extraEnv,
  };
  delete env.DATABASE_URL;
  let child: ChildProcess | undefined;

  const server: TestServer = {
    base,
    env,
    process: () => child!,
    async start() {
      child = spawn(process.execPath, [START, "-p", String(port), "-H", "127.0.0.1"], { env, stdio: ["ignore", "ignore", "inherit"] });
      await waitUntilUp(`${base}/api/health`, child, "npm start did not come up");
    },
    async stop() {
      // A server that does not exit on SIGTERM is a bug (it once waited for open event streams
      // forever): it is killed so nothing is left behind, and this fails.
      await stopWithSigterm(child, "npm start");
    },
    async dispose() {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
    admin: (...args) => execFileSync(TSX, ["scripts/admin.ts", ...args], { env, encoding: "utf8" }).trim(),
    adminAsync: (...args) => adminCliAsync(env, ...args),
  };
  await server.start();
  return server;
}

/** `npm start` (scripts/start.mjs) on 127.0.0.1:`port` with exactly `env`: stdout ignored, stderr shown. */
export function spawnStart(port: number, env: NodeJS.ProcessEnv): ChildProcess {
  return spawn(process.execPath, [START, "-p", String(port), "-H", "127.0.0.1"], { env, stdio: ["ignore", "ignore", "inherit"] });
}

/** The operator CLI (`tsx scripts/admin.ts ...`) with `env` (e.g. a DATABASE_URL); returns its trimmed stdout. */
export function adminCli(env: NodeJS.ProcessEnv, ...args: string[]): string {
  return execFileSync(TSX, ["scripts/admin.ts", ...args], { env, encoding: "utf8" }).trim();
}

/** adminCli without blocking this process's event loop (its requests and timers go on meanwhile). */
export function adminCliAsync(env: NodeJS.ProcessEnv, ...args: string[]): Promise<string> {
  const child = spawn(TSX, ["scripts/admin.ts", ...args], { env, stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  child.stdout!.on("data", (chunk: Buffer) => (out += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code) => (code === 0 ? resolve(out.trim()) : reject(new Error(`admin ${args.join(" ")} exited with ${code}`))));
  });
}

import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";

// `npm start` (scripts/start.mjs) as a user runs it (production build, embedded PGlite in a fresh DATA_DIR), on
// a free loopback port, with the operator CLI pointed at the same data.

/** The production server, as `npm start` runs it. */
const START = path.resolve("scripts/start.mjs");
const TSX = path.resolve("node_modules/.bin/tsx");

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
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
      const deadline = Date.now() + 60_000;
      while (Date.now() < deadline) {
        try {
          if ((await fetch(`${base}/api/health`)).ok) return;
        } catch {
          // starting
        }
        await new Promise((r) => setTimeout(r, 250));
      }
      throw new Error("npm start did not come up");
    },
    async stop() {
      if (!child || child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child!.once("exit", r));
      child.kill("SIGTERM");
      // A server that does not exit on SIGTERM is a bug (it once waited for open event streams
      // forever): kill it so nothing is left behind, and fail.
      let timer: NodeJS.Timeout | undefined;
      const hung = await Promise.race([exited.then(() => false), new Promise<boolean>((r) => (timer = setTimeout(() => r(true), 20_000)))]);
      clearTimeout(timer);
      if (hung) {
        child.kill("SIGKILL");
        await exited;
        throw new Error("npm start did not exit within 20 s of SIGTERM");
      }
    },
    async dispose() {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
    admin: (...args) => execFileSync(TSX, ["scripts/admin.ts", ...args], { env, encoding: "utf8" }).trim(),
  };
  await server.start();
  return server;
}

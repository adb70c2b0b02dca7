import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import path from "node:path";

// A mock of a provider's API generated from the vendor's own OpenAPI document (tests/specs: copies
// of the documents the providers publish, kept in the repo so a clean clone tests on its own)
// by Prism, on a loopback port: it validates every request against the document and answers
// 4xx (the document's error response, or 422) for one the real API would reject. Contract
// tests point an adapter at it and assert that each call the adapter makes succeeds.

const PRISM = path.resolve(import.meta.dirname, "../node_modules/@stoplight/prism-cli/dist/index.js");
export const SPECS = path.resolve(import.meta.dirname, "specs");

export interface PrismMock {
  url: string;
  /** Violations Prism logged for requests so far (its validator's lines). */
  violations(): string[];
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}

/** Starts `prism mock` for `specFile` (a name in tests/specs) and waits until it listens. */
export async function startPrism(specFile: string, timeoutMs = 60_000): Promise<PrismMock> {
  return spawnPrism(["mock", path.join(SPECS, specFile)], timeoutMs);
}

/**
 * Starts `prism proxy --errors` for the document at `documentPath` in front of `upstream`: every
 * request is forwarded, and an answer that breaks the document comes back as Prism's 500
 * problem+json (and any violation, warnings too, in the `sl-violations` header). With
 * `validateRequest: false` a request the document forbids is forwarded too, so the server's own
 * error answers to it are checked.
 */
export async function startPrismProxy(documentPath: string, upstream: string, options: { validateRequest?: boolean; timeoutMs?: number } = {}): Promise<PrismMock> {
  const args = ["proxy", "--errors", `--validate-request=${options.validateRequest ?? true}`, documentPath, upstream];
  return spawnPrism(args, options.timeoutMs ?? 60_000);
}

async function spawnPrism(args: string[], timeoutMs: number): Promise<PrismMock> {
  const port = await freePort();
  const [command, ...rest] = args;
  const child: ChildProcess = spawn(process.execPath, [PRISM, command!, "-h", "127.0.0.1", "-p", String(port), ...rest], {
    env: { ...process.env, SCARF_ANALYTICS: "false", NO_COLOR: "1", FORCE_COLOR: "0" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  child.stdout!.on("data", (d: Buffer) => (log += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (log += d.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const deadline = Date.now() + timeoutMs;
  while (!/Prism is listening/.test(log)) {
    if (child.exitCode !== null) throw new Error(`prism exited (${child.exitCode}):\n${log.slice(-2000)}`);
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`prism did not start within ${timeoutMs} ms:\n${log.slice(-2000)}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url: `http://127.0.0.1:${port}`,
    violations: () => log.split("\n").filter((l) => /\[VALIDATOR\].*(error|✖)/.test(l)),
    async stop() {
      if (child.exitCode === null) {
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), 3_000);
        await exited;
        clearTimeout(timer);
      }
    },
  };
}

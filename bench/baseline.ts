// The separate trivial Next.js app npm run bench measures /v1 against (bench/baseline/: one
// route handler answering a stored envelope, nothing of ours), built with `next build` and run
// with `next start` beside the server under test. Its ratio is the target; the in-app echo
// route (/api/bench/echo) stays as a second reference, so the cost of our own per-request
// shell shows as the gap between the two.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";

const NEXT = path.resolve("node_modules/.bin/next");
const DIR = path.resolve("bench/baseline");

export interface Baseline {
  base: string;
  pid: number;
  stop(): Promise<void>;
}

export function buildBaseline(): void {
  if (existsSync(path.join(DIR, ".next/BUILD_ID"))) return;
  console.error("Building the baseline app (bench/baseline) with `next build`.");
  execFileSync(NEXT, ["build", DIR], { stdio: ["ignore", "ignore", "inherit"], env: { ...process.env, NEXT_TELEMETRY_DISABLED: "1" } });
}

export async function startBaseline(port: number): Promise<Baseline> {
  buildBaseline();
  const base = `http://127.0.0.1:${port}`;
  const child: ChildProcess = spawn(NEXT, ["start", DIR, "-p", String(port), "-H", "127.0.0.1"], {
    env: { ...process.env, NODE_ENV: "production", NEXT_TELEMETRY_DISABLED: "1" },
    stdio: ["ignore", "ignore", "inherit"],
  });
  // Any answer (a 404: no envelope is stored yet) means the server is up.
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      await fetch(`${base}/echo?name=`);
      break;
    } catch {
      if (Date.now() > deadline || child.exitCode !== null) throw new Error("the baseline app did not start");
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  return {
    base,
    pid: child.pid!,
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
    },
  };
}

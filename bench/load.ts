// Load for npm run bench, always from a separate process: wrk when it is on PATH (light, so it
// takes little CPU from the server on a small machine), otherwise the autocannon CLI. A load
// generator inside the server's (or the bench's) own event loop flatters the figures.
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

/** The running server a part measures from outside: its URL, an API key, its account, environment and database. */
export interface ServerTarget {
  base: string;
  auth: Record<string, string>;
  account: string;
  env: NodeJS.ProcessEnv;
  db: import("pg").ClientConfig;
  /** The PostgreSQL schema (table statistics), or null on PGlite. */
  schema: string | null;
  seconds: number;
  connections: number;
  serverPid: number;
}

export interface LoadOptions {
  url: string;
  /** Requests per second in total (a fixed rate, autocannon's -R); unset: as fast as the server answers. */
  rate?: number;
  method?: "GET" | "POST";
  headers?: Record<string, string>;
  body?: string;
  connections: number;
  seconds: number;
  /**
   * Each request its own URL and body: `[<id>]` in them is replaced by a new ID per request
   * (autocannon's -I; wrk sends one fixed request, so autocannon runs these). For routes whose
   * repeated identical reads the read cache would answer.
   */
  unique?: boolean;
}

export interface LoadResult {
  rps: number;
  /** Latency percentiles in milliseconds. */
  p50: number;
  p99: number;
  /** Non-2xx answers plus socket errors and timeouts. */
  errors: number;
  requests: number;
}

function onPath(command: string): boolean {
  try {
    execFileSync("sh", ["-c", `command -v ${command}`], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

export const loadGenerator: "wrk" | "autocannon" = process.env.BENCH_LOAD === "autocannon" || !onPath("wrk") ? "autocannon" : "wrk";

const luaString = (s: string) => JSON.stringify(s); // a JSON string literal is a valid Lua string literal for ASCII

/** wrk's Lua script: the request, and a `done` hook that prints the figures as one JSON line. */
function wrkScript(o: LoadOptions): string {
  const lines = [`wrk.method = ${luaString(o.method ?? "GET")}`];
  for (const [k, v] of Object.entries(o.headers ?? {})) lines.push(`wrk.headers[${luaString(k)}] = ${luaString(v)}`);
  if (o.body !== undefined) lines.push(`wrk.body = ${luaString(o.body)}`);
  lines.push(`done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('BENCH_JSON {"requests":%d,"duration_us":%d,"socket_errors":%d,"status_errors":%d,"p50_us":%d,"p99_us":%d}\\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50), latency:percentile(99)))
end`);
  return lines.join("\n");
}

/** Runs a command to its end (bounded); resolves with its stdout, rejects with its stderr. */
export function run(command: string, args: string[], env: NodeJS.ProcessEnv | undefined, timeoutMs: number, onStderr?: (text: string) => void): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const child = spawn(command, args, { env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      onStderr?.(stderr);
      if (code === 0) resolve(stdout);
      else reject(new Error(`${path.basename(command)} ${args.join(" ").slice(0, 200)} exited with ${code}: ${stderr.slice(0, 500)}`));
    });
  });
}

export async function load(o: LoadOptions): Promise<LoadResult> {
  const timeoutMs = (o.seconds + 30) * 1000;
  if (loadGenerator === "wrk" && o.rate === undefined && !o.unique) {
    const dir = mkdtempSync(path.join(tmpdir(), "relay-wrk-"));
    try {
      const script = path.join(dir, "request.lua");
      writeFileSync(script, wrkScript(o));
      const out = await run("wrk", ["-t1", `-c${o.connections}`, `-d${o.seconds}s`, "--timeout", "10s", "-s", script, o.url], undefined, timeoutMs);
      const line = out.split("\n").find((l) => l.startsWith("BENCH_JSON "));
      if (!line) throw new Error(`wrk printed no figures: ${out.slice(0, 500)}`);
      const r = JSON.parse(line.slice("BENCH_JSON ".length)) as {
        requests: number;
        duration_us: number;
        socket_errors: number;
        status_errors: number;
        p50_us: number;
        p99_us: number;
      };
      return {
        rps: r.requests / (r.duration_us / 1e6),
        p50: r.p50_us / 1000,
        p99: r.p99_us / 1000,
        errors: r.socket_errors + r.status_errors,
        requests: r.requests,
      };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const args = ["--json", "-c", String(o.connections), "-d", String(o.seconds), "-m", o.method ?? "GET"];
  if (o.rate !== undefined) args.push("-R", String(o.rate));
  if (o.unique) args.push("-I");
  for (const [k, v] of Object.entries(o.headers ?? {})) args.push("-H", `${k}=${v}`);
  if (o.body !== undefined) args.push("-b", o.body);
  args.push(o.url);
  const out = await run(path.resolve("node_modules/.bin/autocannon"), args, undefined, timeoutMs);
  const r = JSON.parse(out) as {
    requests: { average: number; total: number };
    latency: { p50: number; p99: number };
    non2xx: number;
    errors: number;
  };
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.non2xx + r.errors, requests: r.requests.total };
}

/** CPU seconds (user + system) used so far by a process and its descendants (Linux /proc). */
export function cpuSeconds(rootPid: number): number {
  const tick = 100; // USER_HZ on Linux
  const stats = new Map<number, { ppid: number; cpu: number }>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      stats.set(Number(entry), { ppid: Number(fields[1]), cpu: (Number(fields[11]) + Number(fields[12])) / tick });
    } catch {
      // exited meanwhile
    }
  }
  let total = 0;
  const walk = (pid: number) => {
    total += stats.get(pid)?.cpu ?? 0;
    for (const [child, s] of stats) if (s.ppid === pid) walk(child);
  };
  walk(rootPid);
  return total;
}

export interface Measured extends LoadResult {
  /** Server CPU milliseconds per request during the run. */
  cpuMs: number;
}

/** A load run, with the server's CPU time per request. */
export async function measureWithCpu(serverPid: number, o: LoadOptions): Promise<Measured> {
  const before = cpuSeconds(serverPid);
  const result = await load(o);
  const cpu = cpuSeconds(serverPid) - before;
  return { ...result, cpuMs: (cpu * 1000) / Math.max(1, result.requests) };
}

/**
 * Stores a route's real answer as the envelope the trivial routes answer: each of `echoes` is
 * an echo route's URL (the in-app /api/bench/echo, the baseline app's /echo).
 */
export async function storeEnvelope(echoes: string[], name: string, response: Response): Promise<void> {
  const body = await response.text();
  for (const echo of echoes) {
    const res = await fetch(`${echo}?name=${name}&status=${response.status}`, { method: "PUT", body });
    if (res.status !== 204) throw new Error(`could not store the ${name} envelope at ${echo}: ${res.status}`);
  }
}

/** The environment of a bench's own `npm start` on loopback `port`: production, no telemetry, and `extra`. */
export function serverEnv(port: number, extra: Record<string, string>): NodeJS.ProcessEnv {
  return { ...process.env, NEXT_TELEMETRY_DISABLED: "1", PUBLIC_URL: `http://127.0.0.1:${port}`, PORT: String(port), ...extra, NODE_ENV: "production" };
}

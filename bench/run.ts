// npm run bench: requests/s and latency of authenticated reads against `next start`, on
// embedded PGlite and on PostgreSQL (127.0.0.1:5432, when reachable), next to a trivial route
// handler (/api/health) measured in the same run. Loopback only; bounded in time.
//   BENCH_SECONDS (default 10) per measurement, BENCH_ROUNDS (default 3, median reported),
//   BENCH_CONNECTIONS (default 32), BENCH_ONLY=postgres to skip PGlite, BENCH_PARTS (default
//   reads,writes,webhooks) to run only some parts, BENCH_DRAIN / BENCH_DRAIN_PGLITE and
//   BENCH_WEBHOOKS / BENCH_WEBHOOKS_PGLITE for the backlog sizes.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { readFileSync } from "node:fs";
import autocannon from "autocannon";
import pg from "pg";
import { measureWebhooks, type WebhookResults } from "./webhooks";
import { measureWrites, type WriteResults } from "./writes";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const DRAIN = { postgres: Number(process.env.BENCH_DRAIN ?? 10_000), pglite: Number(process.env.BENCH_DRAIN_PGLITE ?? 2_000) };
const PARTS = new Set((process.env.BENCH_PARTS ?? "reads,writes,webhooks").split(",").map((p) => p.trim()));
const WEBHOOKS = { postgres: Number(process.env.BENCH_WEBHOOKS ?? 20_000), pglite: Number(process.env.BENCH_WEBHOOKS_PGLITE ?? 5_000) };
const writeRows: { database: string; w: WriteResults }[] = [];
const webhookRows: { database: string; h: WebhookResults }[] = [];
const PG_URL = process.env.BENCH_DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/test";
const NEXT = path.resolve("node_modules/.bin/next");
const TSX = path.resolve("node_modules/.bin/tsx");

interface Row {
  database: string;
  route: string;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  ratio: number;
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

async function waitFor(url: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`server did not answer ${url}`);
}

/** fetch with one retry: an idle pooled connection may have been closed by the server. */
async function fetchRetry(url: string, init?: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch {
    return fetch(url, init);
  }
}

async function measure(url: string, headers: Record<string, string> = {}) {
  const result = await autocannon({ url, connections: CONNECTIONS, duration: SECONDS, headers, pipelining: 1 });
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, errors: result.non2xx + result.errors };
}

async function postgresReachable(): Promise<boolean> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.end();
    return true;
  } catch {
    return false;
  }
}

/** Authenticated reads next to the trivial route, in interleaved rounds (median reported). */
async function measureReads(database: string, base: string, auth: Record<string, string>): Promise<Row[]> {
  // Warm up every route (JIT, caches), then measure.
  for (const u of ["/api/health", "/v1/lines", "/v1/chats?from=%2B15550009000&limit=50"]) {
    await autocannon({ url: base + u, connections: 8, duration: 2, headers: auth });
  }
  // Interleaved rounds, median of each: this machine's background noise hits all routes alike.
  const targets: [string, string, Record<string, string>][] = [
    ["GET /api/health (trivial)", `${base}/api/health`, {}],
    ["GET /v1/lines", `${base}/v1/lines`, auth],
    ["GET /v1/chats (50)", `${base}/v1/chats?from=%2B15550009000&limit=50`, auth],
  ];
  const runs = new Map<string, Awaited<ReturnType<typeof measure>>[]>();
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, url, headers] of targets) {
      runs.set(name, [...(runs.get(name) ?? []), await measure(url, headers)]);
    }
  }
  const median = (name: string) => {
    const all = [...runs.get(name)!].sort((a, b) => a.rps - b.rps);
    return all[Math.floor(all.length / 2)]!;
  };
  const [trivial, lines, chatPage] = targets.map(([name]) => median(name)) as [ReturnType<typeof median>, ReturnType<typeof median>, ReturnType<typeof median>];
  const row = (route: string, m: typeof trivial): Row => ({ database, route, ...m, ratio: m.rps / trivial.rps });

  return [row("GET /api/health (trivial)", trivial), row("GET /v1/lines", lines), row("GET /v1/chats (50)", chatPage)];
}

async function runOn(database: "pglite" | "postgres"): Promise<Row[]> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  // WEBHOOK_ALLOW_INSECURE: the bench's receiver is plain HTTP on loopback.
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_ENV: "production",
    NEXT_TELEMETRY_DISABLED: "1",
    PUBLIC_URL: base,
    PORT: String(port),
    WEBHOOK_ALLOW_INSECURE: "true",
    SIMULATOR_ENABLED: "true",
  };
  let dataDir: string | undefined;
  const schema = `bench_${Date.now()}`;
  if (database === "pglite") {
    dataDir = mkdtempSync(path.join(tmpdir(), "relay-bench-"));
    env.DATA_DIR = dataDir;
    delete env.DATABASE_URL;
  } else {
    env.DATABASE_URL = PG_URL;
    env.DATABASE_SCHEMA = schema;
  }
  let server: ChildProcess | undefined;
  try {
    server = spawn(NEXT, ["start", "-p", String(port), "-H", "127.0.0.1"], { env, stdio: ["ignore", "ignore", "inherit"] });
    await waitFor(`${base}/api/health`);
    // Seed through the operator CLI (reaching the running server's database) and the API.
    const admin = (...args: string[]) => execFileSync(TSX, ["scripts/admin.ts", ...args], { env, encoding: "utf8" }).trim();
    admin("account", "create", "--email", "bench@example.com");
    admin("line", "create", "--account", "bench@example.com", "--handle", "+15550009000", "--advanced");
    const key = admin("key", "create", "--account", "bench@example.com", "--name", "bench", "--rate-limit", "100000000");
    const auth = { authorization: `Bearer ${key}` };
    for (let i = 0; i < 60; i++) {
      const res = await fetchRetry(`${base}/api/simulator/messages`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: JSON.stringify({ line: "+15550009000", from: `+1555100${String(i).padStart(4, "0")}`, text: `hello ${i}` }),
      });
      if (res.status !== 201) throw new Error(`seeding failed: ${res.status} ${await res.text()}`);
    }
    const chats = await (await fetchRetry(`${base}/v1/chats?from=%2B15550009000&limit=50`, { headers: auth })).json();
    if (chats.data?.length !== 50) throw new Error(`expected a page of 50 chats, got ${JSON.stringify(chats).slice(0, 200)}`);

    const readRows = PARTS.has("reads") ? await measureReads(database, base, auth) : [];
    const dbConfig: pg.ClientConfig =
      database === "pglite"
        ? (() => {
            const info = JSON.parse(readFileSync(path.join(dataDir!, "server.json"), "utf8"));
            return { host: info.pgliteSocket.host, port: info.pgliteSocket.port, user: "postgres", database: "postgres" };
          })()
        : { connectionString: PG_URL, options: `-c search_path="${schema}"` };
    if (PARTS.has("writes")) {
      const w = await measureWrites({
        base,
        auth,
        line: "+15550009000",
        contact: "+15551000000",
        db: dbConfig,
        seconds: SECONDS,
        rounds: ROUNDS,
        drainCount: DRAIN[database],
      });
      writeRows.push({ database, w });
    }
    if (PARTS.has("webhooks")) {
      webhookRows.push({ database, h: await measureWebhooks({ base, auth, line: "+15550009000", db: dbConfig, count: WEBHOOKS[database] }) });
    }
    return readRows;
  } finally {
    server?.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 1000));
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    if (database === "postgres") {
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await client.end();
    }
  }
}

async function main(): Promise<void> {
  if (!existsSync(".next/BUILD_ID")) {
    console.error("No production build: running `next build` first.");
    execFileSync(NEXT, ["build"], { stdio: "inherit", env: { ...process.env, NEXT_TELEMETRY_DISABLED: "1" } });
  }
  const rows: Row[] = [];
  if (process.env.BENCH_ONLY !== "postgres") rows.push(...(await runOn("pglite")));
  if (await postgresReachable()) rows.push(...(await runOn("postgres")));
  else console.error(`PostgreSQL not reachable at ${PG_URL}: skipped.`);
  if (rows.length) {
    console.log(`\n${CONNECTIONS} connections, ${SECONDS}s per route, median of ${ROUNDS} interleaved rounds, loopback, next start\n`);
    console.log("database   route                        req/s     p50 ms   p99 ms   non-2xx   vs trivial");
    for (const r of rows) {
      console.log(
        `${r.database.padEnd(10)} ${r.route.padEnd(28)} ${r.rps.toFixed(0).padStart(7)} ${String(r.p50).padStart(9)} ${String(r.p99).padStart(8)} ${String(r.errors).padStart(9)}   ${(r.ratio * 100).toFixed(0).padStart(5)}%`,
      );
    }
  }
  if (writeRows.length) {
    console.log("\nWrites (issue 3 targets: accept >= 60% of trivial on PostgreSQL; drain >= 1,000/s on PostgreSQL with 0 lost and 0 duplicated; idle POST-to-sent p50 < 50 ms)");
    console.log("database   trivial req/s  POST /v1/messages req/s  p99 ms  vs trivial   drained  items/s  seconds  lost  dup   POST->sent p50/p99 ms");
    for (const { database, w } of writeRows) {
      console.log(
        `${database.padEnd(10)} ${w.trivialRps.toFixed(0).padStart(13)} ${w.acceptRps.toFixed(0).padStart(24)} ${String(w.acceptP99).padStart(7)} ${((w.acceptRps / w.trivialRps) * 100).toFixed(0).padStart(10)}% ${String(w.drained).padStart(9)} ${w.drainPerSecond.toFixed(0).padStart(8)} ${w.drainSeconds.toFixed(1).padStart(8)} ${String(w.lost).padStart(5)} ${String(w.duplicated).padStart(4)}   ${w.latencyP50.toFixed(0)}/${w.latencyP99.toFixed(0)}`,
      );
    }
  }
  if (webhookRows.length) {
    console.log("\nWebhooks (issue 4 target: >= 1,000 signed deliveries/s on PostgreSQL to a local receiver answering 200, 0 lost, 0 duplicated)");
    console.log("database   deliveries  seconds  deliveries/s  lost  dup  bad signatures  succeeded in db");
    for (const { database, h } of webhookRows) {
      console.log(
        `${database.padEnd(10)} ${String(h.delivered).padStart(10)} ${h.seconds.toFixed(1).padStart(8)} ${h.perSecond.toFixed(0).padStart(13)} ${String(h.lost).padStart(5)} ${String(h.duplicated).padStart(4)} ${String(h.badSignatures).padStart(15)} ${String(h.succeeded).padStart(16)}`,
      );
    }
  }
  const reads = rows.filter((r) => r.route.startsWith("GET /v1"));
  if (!reads.length) return;
  const worst = Math.min(...reads.map((r) => r.ratio));
  console.log(`\nTarget: authenticated reads at >= 70% of the trivial route. Worst: ${(worst * 100).toFixed(0)}% -> ${worst >= 0.7 ? "met" : "NOT met"}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});

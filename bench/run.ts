// npm run bench: requests/s, latency and server CPU per request of authenticated reads and
// writes against `next start`, on embedded PGlite and on PostgreSQL (127.0.0.1:5432, when
// reachable). Each /v1 route is measured next to two trivial routes answering the same
// envelope, in the same run: a separate minimal Next.js app (bench/baseline, `next build` +
// `next start`; its ratio is the target, so our own per-request shell counts against /v1) and
// the in-app echo route (/api/bench/echo, which pays our shell too: the gap between the two
// ratios is that shell's cost). Load comes from a separate process (wrk, or the autocannon
// CLI: bench/load.ts). Loopback only; bounded in time.
//   BENCH_SECONDS (default 10) per measurement, BENCH_ROUNDS (default 3, median reported),
//   BENCH_CONNECTIONS (default 32), BENCH_FIXED_RATE (default 200 req/s, for CPU per request
//   without saturation), BENCH_LOAD=autocannon to use autocannon even where wrk is
//   installed, BENCH_ONLY=postgres or pglite to measure one database, BENCH_PARTS (default
//   reads,writes,webhooks,inbound,twilio,policy,mcp,instances,observability,search) to run only some parts
//   (instances: bench/instances.ts, one app instance vs two on PostgreSQL; observability: the
//   same file, the request log and metrics' cost on GET /v1/chats; search: bench/search.ts,
//   full-text search over BENCH_SEARCH_MESSAGES (default 1,000,000) messages on PostgreSQL, with
//   one connection and BENCH_SEARCH_CONNECTIONS (default 8), BENCH_SEARCH_SECONDS (default
//   BENCH_SECONDS) per measurement), BENCH_DRAIN / BENCH_DRAIN_PGLITE and
//   BENCH_WEBHOOKS / BENCH_WEBHOOKS_PGLITE for the backlog sizes, the inbound part
//   (bench/pipeline.ts: BlueBubbles webhooks from wrk, 20% of them redeliveries, stored and
//   delivered to 1 and to 5 webhooks) BENCH_INBOUND_SECONDS (default 60) of load per scenario,
//   BENCH_INBOUND_CONNECTIONS (default 64) webhooks in flight, BENCH_INBOUND_HELD (default
//   100,000; 0: none) scheduled sends held before its last scenario, BENCH_TWILIO / BENCH_TWILIO_PGLITE for the distinct events of the
//   twilio part (bench/twilio.ts: signed inbound messages and status callbacks, 20% repeats),
//   BENCH_NODE_ARGS for the server's node flags
//   (e.g. --cpu-prof). The policy part (bench/policy.ts, on both databases): accepted POST
//   /v1/messages on the default line against a line whose send policy makes the claim-time step
//   run and against send_at a day ahead (BENCH_SECONDS, BENCH_ROUNDS interleaved rounds), idle
//   CPU (the server and its PostgreSQL backends) over BENCH_POLICY_IDLE_SECONDS (default 10)
//   before anything is held and with BENCH_POLICY_HELD (default 100,000) held, GET
//   /v1/capacity latency, and a due burst of BENCH_BURST_ITEMS (default 1,000) held items on
//   each of BENCH_BURST_LINES (default 10) BlueBubbles lines paced at BENCH_BURST_RATE
//   (default 50) sends/s (BENCH_BURST_LINES=0: no burst). The mcp part (bench/mcp.ts, on both
//   databases): send_message over MCP against POST /v1/messages, and BENCH_MCP_WAITS (default
//   40) wait_for_reply calls at once with the server's database connections read meanwhile.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { type Baseline, buildBaseline, startBaseline } from "./baseline";
import { load, loadGenerator, type LoadOptions, type Measured, measureWithCpu, serverEnv, storeEnvelope } from "./load";
import { type InboundResults, measureInbound } from "./pipeline";
import { inboundReport } from "./pipeline-report";
import { instancesReport, measureInstances } from "./instances";
import { measurePolicy, type PolicyResults, policyReport } from "./policy";
import { mcpReport, type McpResults, measureMcp } from "./mcp";
import { measureSearch, searchReport } from "./search";
import { measureTwilio, type TwilioResults } from "./twilio";
import { measureWebhooks, type WebhookResults } from "./webhooks";
import { measureWrites, type WriteResults } from "./writes";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
/** The fixed rate at which CPU per request is also measured (autocannon -R): efficiency without saturation. */
const FIXED_RATE = Number(process.env.BENCH_FIXED_RATE ?? 200);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const DRAIN = { postgres: Number(process.env.BENCH_DRAIN ?? 10_000), pglite: Number(process.env.BENCH_DRAIN_PGLITE ?? 2_000) };
const PARTS = new Set((process.env.BENCH_PARTS ?? "reads,writes,webhooks,inbound,twilio,policy,mcp,instances,observability,search").split(",").map((p) => p.trim()));
/** The parts measured on the single server runOn starts (instances starts its own). */
const SINGLE_SERVER_PARTS = ["reads", "writes", "webhooks", "inbound", "twilio", "policy", "mcp"].some((p) => PARTS.has(p));
const WEBHOOKS = { postgres: Number(process.env.BENCH_WEBHOOKS ?? 20_000), pglite: Number(process.env.BENCH_WEBHOOKS_PGLITE ?? 5_000) };
const INBOUND_HELD = Number(process.env.BENCH_INBOUND_HELD ?? 100_000);
const INBOUND_SECONDS = Number(process.env.BENCH_INBOUND_SECONDS ?? 60);
const TWILIO = { postgres: Number(process.env.BENCH_TWILIO ?? 20_000), pglite: Number(process.env.BENCH_TWILIO_PGLITE ?? 5_000) };
/**
 * Provider webhooks in flight at once in the inbound part. Each is a separate POST, and a
 * service receives them from every connected Mac or phone at once; at 32 in flight the figure
 * is bound by each request's round trips, not by the server's CPU (see docs/benchmarks.md).
 */
const INBOUND_CONNECTIONS = Number(process.env.BENCH_INBOUND_CONNECTIONS ?? 64);
const writeRows: { database: string; w: WriteResults }[] = [];
const inboundRows: { database: string; r: InboundResults }[] = [];
const twilioRows: { database: string; t: TwilioResults }[] = [];
const webhookRows: { database: string; h: WebhookResults }[] = [];
const policyRows: { database: string; p: PolicyResults }[] = [];
const mcpRows: { database: string; m: McpResults }[] = [];
const POLICY = {
  held: Number(process.env.BENCH_POLICY_HELD ?? 100_000),
  idleSeconds: Number(process.env.BENCH_POLICY_IDLE_SECONDS ?? 10),
  burst: {
    lines: Number(process.env.BENCH_BURST_LINES ?? 10),
    perLine: Number(process.env.BENCH_BURST_ITEMS ?? 1_000),
    rate: Number(process.env.BENCH_BURST_RATE ?? 50),
  },
};
const PG_URL = process.env.BENCH_DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/test";
const NEXT = path.resolve("node_modules/.bin/next");
const TSX = path.resolve("node_modules/.bin/tsx");
/** The production server, as `npm start` runs it. */
const START = path.resolve("scripts/start.mjs");
/** The node flags `npm start` gives it (package.json's start script: `node <flags> scripts/start.mjs`). */
const START_NODE_FLAGS: string[] = (JSON.parse(readFileSync("package.json", "utf8")).scripts.start as string)
  .split(" ")
  .filter((word) => word.startsWith("--"));

interface Row extends Measured {
  database: string;
  route: string;
  /** Server CPU ms per request at FIXED_RATE requests/s. */
  cpuMsAtRate: number;
  /** Requests/s as a share of the baseline app's route answering the same envelope (the target). */
  ratio: number | null;
  /** Requests/s as a share of the in-app echo route answering the same envelope. */
  ratioEcho: number | null;
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

const measure = (serverPid: number, o: Omit<LoadOptions, "connections" | "seconds">) =>
  measureWithCpu(serverPid, { ...o, connections: CONNECTIONS, seconds: SECONDS });

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

/** Authenticated reads, each next to the trivial routes answering the same envelope, in interleaved rounds (median reported). */
async function measureReads(database: string, base: string, auth: Record<string, string>, serverPid: number, baseline: Baseline): Promise<Row[]> {
  const chatsUrl = `${base}/v1/chats?from=%2B15550009000&limit=50`;
  const echoes = [`${base}/api/bench/echo`, `${baseline.base}/echo`];
  await storeEnvelope(echoes, "chats", await fetch(chatsUrl, { headers: auth }));
  await storeEnvelope(echoes, "lines", await fetch(`${base}/v1/lines`, { headers: auth }));
  // [name, url, headers, pid of the process that answers]
  const targets: [string, string, Record<string, string>, number][] = [
    ["GET /api/health", `${base}/api/health`, {}, serverPid],
    ["baseline app (lines envelope)", `${baseline.base}/echo?name=lines`, {}, baseline.pid],
    ["in-app echo (lines envelope)", `${base}/api/bench/echo?name=lines`, {}, serverPid],
    ["GET /v1/lines", `${base}/v1/lines`, auth, serverPid],
    ["baseline app (chats envelope)", `${baseline.base}/echo?name=chats`, {}, baseline.pid],
    ["in-app echo (chats envelope)", `${base}/api/bench/echo?name=chats`, {}, serverPid],
    ["GET /v1/chats (50)", chatsUrl, auth, serverPid],
  ];
  // Warm up every route (JIT, caches), then measure.
  for (const [, url, headers] of targets) await load({ url, headers, connections: 8, seconds: 2 });
  // Interleaved rounds, median of each: this machine's background noise hits all routes alike.
  const runs = new Map<string, Measured[]>();
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, url, headers, pid] of targets) {
      runs.set(name, [...(runs.get(name) ?? []), await measure(pid, { url, headers })]);
    }
  }
  const median = (name: string) => {
    const all = [...runs.get(name)!].sort((a, b) => a.rps - b.rps);
    return all[Math.floor(all.length / 2)]!;
  };
  const atRate = new Map<string, number>();
  for (const [name, url, headers, pid] of targets) {
    atRate.set(name, (await measureWithCpu(pid, { url, headers, connections: 8, seconds: SECONDS, rate: FIXED_RATE })).cpuMs);
  }
  const row = (route: string, envelope: "lines" | "chats" | null): Row => {
    const m = median(route);
    const share = (trivial: string) => m.rps / median(trivial).rps;
    return {
      database,
      route,
      ...m,
      cpuMsAtRate: atRate.get(route)!,
      ratio: envelope ? share(`baseline app (${envelope} envelope)`) : null,
      ratioEcho: envelope ? share(`in-app echo (${envelope} envelope)`) : null,
    };
  };
  return [
    row("GET /api/health", null),
    row("baseline app (lines envelope)", null),
    row("in-app echo (lines envelope)", null),
    row("GET /v1/lines", "lines"),
    row("baseline app (chats envelope)", null),
    row("in-app echo (chats envelope)", null),
    row("GET /v1/chats (50)", "chats"),
  ];
}

async function runOn(database: "pglite" | "postgres"): Promise<Row[]> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  // WEBHOOK_ALLOW_INSECURE: the bench's receiver is plain HTTP on loopback.
  const env = serverEnv(port, {
    WEBHOOK_ALLOW_INSECURE: "true",
    // The provider fakes (BlueBubbles, Twilio) listen on loopback.
    PROVIDER_ALLOW_PRIVATE: "true",
    BENCH_ECHO: "true",
    SIMULATOR_ENABLED: "true",
  });
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
  let baseline: Baseline | undefined;
  try {
    // BENCH_NODE_ARGS: extra node flags for the server, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof".
    const nodeArgs = (process.env.BENCH_NODE_ARGS ?? "").split(" ").filter(Boolean);
    server = spawn(process.execPath, [...START_NODE_FLAGS, ...nodeArgs, START, "-p", String(port), "-H", "127.0.0.1"], {
      env,
      stdio: ["ignore", "ignore", "inherit"],
    });
    await waitFor(`${base}/api/health`);
    baseline = await startBaseline(await freePort());
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

    const readRows = PARTS.has("reads") ? await measureReads(database, base, auth, server.pid!, baseline) : [];
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
        connections: CONNECTIONS,
        fixedRate: FIXED_RATE,
        serverPid: server.pid!,
        baseline,
      });
      writeRows.push({ database, w });
    }
    if (PARTS.has("webhooks")) {
      webhookRows.push({ database, h: await measureWebhooks({ base, auth, line: "+15550009000", db: dbConfig, count: WEBHOOKS[database] }) });
    }
    // The provider parts: webhooks from a separate process to a line connected through the operator CLI.
    const provider = {
      base,
      auth,
      account: "bench@example.com",
      env,
      db: dbConfig,
      schema: database === "postgres" ? schema : "public",
      seconds: INBOUND_SECONDS,
      connections: INBOUND_CONNECTIONS,
      serverPid: server.pid!,
    };
    if (PARTS.has("inbound")) {
      inboundRows.push({ database, r: await measureInbound({ ...provider, database, schema: database === "postgres" ? schema : null, held: INBOUND_HELD }) });
    }
    if (PARTS.has("twilio")) twilioRows.push({ database, t: await measureTwilio({ ...provider, count: TWILIO[database] }) });
    if (PARTS.has("policy")) {
      const p = await measurePolicy({
        database,
        base,
        auth,
        account: "bench@example.com",
        line: "+15550009000",
        env,
        db: dbConfig,
        seconds: SECONDS,
        rounds: ROUNDS,
        connections: CONNECTIONS,
        serverPid: server.pid!,
        held: POLICY.held,
        idleSeconds: POLICY.idleSeconds,
        burst: POLICY.burst.lines > 0 ? POLICY.burst : null,
      });
      policyRows.push({ database, p });
    }
    if (PARTS.has("mcp")) {
      const m = await measureMcp({
        database,
        base,
        auth,
        account: "bench@example.com",
        line: "+15550009000",
        contact: "+15551000001",
        env,
        db: dbConfig,
        seconds: SECONDS,
        rounds: ROUNDS,
        connections: CONNECTIONS,
        serverPid: server.pid!,
        waits: Number(process.env.BENCH_MCP_WAITS ?? 40),
      });
      mcpRows.push({ database, m });
    }
    return readRows;
  } finally {
    await baseline?.stop();
    if (server && server.exitCode === null) {
      const exited = new Promise((r) => server!.once("exit", r));
      server.kill("SIGTERM");
      const stopped = await Promise.race([exited.then(() => true), new Promise((r) => setTimeout(() => r(false), 15_000))]);
      // A server whose database hung never finishes its graceful stop: it must not outlive the bench.
      if (!stopped && server.exitCode === null) server.kill("SIGKILL");
    }
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
  if (PARTS.has("reads") || PARTS.has("writes")) buildBaseline();
  const rows: Row[] = [];
  const pgReachable = process.env.BENCH_ONLY !== "pglite" && (await postgresReachable());
  if (SINGLE_SERVER_PARTS) {
    if (process.env.BENCH_ONLY !== "postgres") rows.push(...(await runOn("pglite")));
    if (process.env.BENCH_ONLY === "pglite") {
      // PostgreSQL skipped on request
    } else if (pgReachable) rows.push(...(await runOn("postgres")));
    else console.error(`PostgreSQL not reachable at ${PG_URL}: skipped.`);
  }
  const instanceOptions = { pgUrl: PG_URL, seconds: SECONDS, rounds: ROUNDS, connections: CONNECTIONS, drainCount: DRAIN.postgres };
  const instanceParts = { throughput: PARTS.has("instances"), observability: PARTS.has("observability") };
  const wantInstances = instanceParts.throughput || instanceParts.observability;
  const instances = wantInstances && pgReachable ? await measureInstances(instanceOptions, instanceParts) : null;
  if (wantInstances && !pgReachable) console.error("instances, observability: PostgreSQL only (not reachable, or BENCH_ONLY=pglite): skipped.");
  const searchOptions = {
    pgUrl: PG_URL,
    messages: Number(process.env.BENCH_SEARCH_MESSAGES ?? 1_000_000),
    seconds: Number(process.env.BENCH_SEARCH_SECONDS ?? SECONDS),
    connections: Number(process.env.BENCH_SEARCH_CONNECTIONS ?? 8),
  };
  const search = PARTS.has("search") && pgReachable ? await measureSearch(searchOptions) : null;
  if (PARTS.has("search") && !pgReachable) console.error("search: PostgreSQL only (not reachable, or BENCH_ONLY=pglite): skipped.");
  console.log(`\n${CONNECTIONS} connections, ${SECONDS}s per route, median of ${ROUNDS} interleaved rounds, loopback, npm start (scripts/start.mjs), load from ${loadGenerator} (a separate process)`);
  if (rows.length) {
    console.log(
      "\nReads: each next to a separate minimal Next.js app (bench/baseline) and the in-app echo route, both answering the same envelope (target: GET /v1/chats >= 80% of the baseline app)",
    );
    console.log(`database   route                           req/s     p50 ms   p99 ms   errors  CPU ms/req  at ${FIXED_RATE}/s  vs baseline app  vs in-app echo`);
    const pct = (x: number | null) => (x === null ? "" : `${(x * 100).toFixed(0)}%`);
    for (const r of rows) {
      console.log(
        `${r.database.padEnd(10)} ${r.route.padEnd(31)} ${r.rps.toFixed(0).padStart(7)} ${r.p50.toFixed(1).padStart(9)} ${r.p99.toFixed(1).padStart(8)} ${String(r.errors).padStart(8)} ${r.cpuMs.toFixed(2).padStart(11)} ${r.cpuMsAtRate.toFixed(2).padStart(9)} ${pct(r.ratio).padStart(16)} ${pct(r.ratioEcho).padStart(15)}`,
      );
    }
  }
  if (writeRows.length) {
    console.log(
      "\nWrites (targets: POST /v1/messages >= 70% of the separate baseline app answering the same envelope; drain >= 1,000/s on PostgreSQL with 0 lost and 0 duplicated; idle POST-to-sent p50 < 50 ms)",
    );
    console.log(
      `database   baseline app req/s  in-app echo req/s  POST /v1/messages req/s  p99 ms  errors  CPU ms/req (echo/POST)  at ${FIXED_RATE}/s  vs baseline app  vs in-app echo   drained  items/s  seconds  lost  dup   POST->sent p50/p99 ms`,
    );
    for (const { database, w } of writeRows) {
      console.log(
        `${database.padEnd(10)} ${w.baseline.rps.toFixed(0).padStart(18)} ${w.trivial.rps.toFixed(0).padStart(18)} ${w.accept.rps.toFixed(0).padStart(24)} ${w.accept.p99.toFixed(1).padStart(7)} ${String(w.accept.errors).padStart(7)} ${`${w.trivial.cpuMs.toFixed(2)}/${w.accept.cpuMs.toFixed(2)}`.padStart(22)} ${`${w.trivialCpuAtRate.toFixed(2)}/${w.acceptCpuAtRate.toFixed(2)}`.padStart(10)} ${((w.accept.rps / w.baseline.rps) * 100).toFixed(0).padStart(15)}% ${((w.accept.rps / w.trivial.rps) * 100).toFixed(0).padStart(14)}% ${String(w.drained).padStart(9)} ${w.drainPerSecond.toFixed(0).padStart(8)} ${w.drainSeconds.toFixed(1).padStart(8)} ${String(w.lost).padStart(5)} ${String(w.duplicated).padStart(4)}   ${w.latencyP50.toFixed(0)}/${w.latencyP99.toFixed(0)}`,
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
  if (inboundRows.length) for (const line of inboundReport(inboundRows, { seconds: INBOUND_SECONDS, connections: INBOUND_CONNECTIONS })) console.log(line);
  if (twilioRows.length) {
    console.log(
      `\nTwilio webhooks: form POSTs to /api/inbound/<line_id> with X-Twilio-Signature checked, inbound messages and status callbacks (sent, delivered in either order), 20% of them repeats, ${INBOUND_CONNECTIONS} in flight from a node:http process (target: >= 1,000/s, 0 lost, 0 duplicated)`,
    );
    console.log("database   inbound  callbacks  requests  req/s  p50 ms  p99 ms  not 200  events/s recorded  events/s delivered  lost in/status  dup in/events  undelivered  CPU ms/req");
    for (const { database, t } of twilioRows) {
      const failures = Object.entries(t.failures).map(([s, n]) => `${n}x${s}`).join(",") || "0";
      if (t.stoppedEarly) console.log(`${database.padEnd(10)} (the ${INBOUND_SECONDS} s bound stopped the load before the end of the list)`);
      console.log(
        `${database.padEnd(10)} ${String(t.inbound).padStart(7)} ${String(t.callbacks).padStart(10)} ${String(t.requests).padStart(9)} ${t.requestsPerSecond.toFixed(0).padStart(6)} ${t.p50.toFixed(1).padStart(7)} ${t.p99.toFixed(1).padStart(7)} ${failures.padStart(8)} ${t.eventsPerSecond.toFixed(0).padStart(18)} ${t.deliveredPerSecond.toFixed(0).padStart(19)} ${`${t.lostInbound}/${t.lostStatuses}`.padStart(15)} ${`${t.duplicatedInbound}/${t.duplicatedEvents}`.padStart(14)} ${String(t.undelivered).padStart(12)} ${t.cpuMsPerRequest.toFixed(2).padStart(11)}`,
      );
      if (t.perRequest) {
        const p = t.perRequest;
        console.log(`${"".padEnd(10)} per request: ${p.idxScans.toFixed(1)} index scans, ${p.inserted.toFixed(2)} rows inserted, ${p.updated.toFixed(2)} rows updated`);
      }
    }
  }
  if (policyRows.length) for (const line of policyReport(policyRows, { connections: CONNECTIONS, seconds: SECONDS, rounds: ROUNDS })) console.log(line);
  if (mcpRows.length) for (const line of mcpReport(mcpRows, { connections: CONNECTIONS, seconds: SECONDS, rounds: ROUNDS })) console.log(line);
  if (instances) for (const line of instancesReport(instances, instanceOptions)) console.log(line);
  if (search) for (const line of searchReport(search, searchOptions)) console.log(line);
  if (!SINGLE_SERVER_PARTS) return;
  const verdict = (what: string, ratio: number | undefined, target: number) =>
    ratio === undefined ? `${what}: not measured` : `${what}: ${(ratio * 100).toFixed(0)}% (target ${target * 100}%) -> ${ratio >= target ? "met" : "NOT met"}`;
  for (const database of ["pglite", "postgres"]) {
    const chats = rows.find((r) => r.database === database && r.route.startsWith("GET /v1/chats"))?.ratio ?? undefined;
    const w = writeRows.find((r) => r.database === database)?.w;
    console.log(
      `\n${database}: against the baseline app: ${verdict("GET /v1/chats", chats, 0.8)}; ${verdict("POST /v1/messages", w && w.accept.rps / w.baseline.rps, 0.7)}`,
    );
    const tw = twilioRows.find((r) => r.database === database)?.t;
    if (tw) {
      const rate = Math.min(tw.eventsPerSecond, tw.deliveredPerSecond);
      const lost = tw.lostInbound + tw.lostStatuses + tw.undelivered;
      const dup = tw.duplicatedInbound + tw.duplicatedEvents;
      console.log(
        `${database}: Twilio inbound and status callbacks: ${rate.toFixed(0)}/s recorded and delivered (target >= 1,000/s) -> ${rate >= 1000 ? "met" : "NOT met"}; lost ${lost}, duplicated ${dup} -> ${lost === 0 && dup === 0 ? "ok" : "NOT ok"}`,
      );
    }
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});

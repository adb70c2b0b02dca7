// The `instances` and `observability` parts of npm run bench (PostgreSQL only), on app
// instances each run as `npm start` with its own empty DATA_DIR on one database.
// - instances: the same app as one instance and as two. Measured: accepted POST /v1/messages
//   per second and their p99 latency (load from separate processes: one generator against the
//   one instance, one per instance against two), outbox drain per second (a backlog inserted
//   at once, delivered by every running instance's embedded runner, lost and duplicated
//   counted).
// - observability: what the request log and the request metrics cost on GET /v1/chats: one
//   instance (LOG_LEVEL as given; stdout goes to /dev/null) with its request hook switched on
//   and off by signal (BENCH_OBSERVABILITY_SWITCH), first warmed up under the full load until
//   the JIT and the heap have settled, then measured both ways in interleaved rounds; the
//   median of the rounds' ratios is reported, with the server CPU per request.
// Loopback only; every wait is bounded.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import type { ChildProcess } from "node:child_process";
import { cpus, tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { adminCliAsync, freePort, spawnStart, stopWithSigterm, waitUntilUp } from "../e2e/harness";
import { cpuSeconds, load, type LoadOptions, type LoadResult, serverEnv } from "./load";

export interface InstancesParts {
  /** One instance vs two: sends accepted, p99, drain. */
  throughput: boolean;
  /** The request log and metrics' cost on GET /v1/chats. */
  observability: boolean;
}

export interface InstancesOptions {
  /** PostgreSQL server URL; a schema of its own is created and dropped. */
  pgUrl: string;
  seconds: number;
  rounds: number;
  connections: number;
  drainCount: number;
}

export interface Throughput {
  instances: number;
  /** Accepted POST /v1/messages per second, all instances together (median round). */
  acceptRps: number;
  /** p99 latency (ms) seen by each load generator in that round (one per instance). */
  p99: number[];
  errors: number;
  /** CPU cores the app instances kept busy during that round. */
  serverCores: number;
  /** CPU cores the whole machine kept busy then (instances, PostgreSQL, load generators, the rest). */
  machineCores: number;
  drained: number;
  drainSeconds: number;
  drainPerSecond: number;
  lost: number;
  duplicated: number;
}

export interface ObservabilityCost {
  /** GET /v1/chats requests/s per round: with the request log and metrics, and with them switched off. */
  withLog: LoadResult[];
  withoutLog: LoadResult[];
  /** The server's CPU milliseconds per request in each round, same order. */
  withLogCpuMs: number[];
  withoutLogCpuMs: number[];
  /** Seconds of full load the instance had before the first round. */
  warmUpSeconds: number;
  /** Seconds of each measurement. */
  roundSeconds: number;
  /** The rounds' rate ratios (1 - with / without), for their spread. */
  ratios: number[];
  /** Median over rounds of 1 - rps(default) / rps(without). */
  overhead: number;
  /** Median over rounds of cpu(default) / cpu(without) - 1. */
  cpuOverhead: number;
}

export interface InstancesResults {
  throughput: { one: Throughput; two: Throughput } | null;
  observability: ObservabilityCost | null;
}

const LINE = "+15550009100";
const CONTACT = "+15550009101";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
/** The first and third quartiles (nearest rank). */
const quartiles = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return [s[Math.floor((s.length - 1) / 4)]!, s[Math.ceil(((s.length - 1) * 3) / 4)]!];
};

/** The machine's busy and total CPU time so far (Linux /proc/stat, all cores). */
function machineTicks(): { busy: number; total: number } {
  const [, ...fields] = readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/);
  const t = fields.map(Number);
  const total = t.slice(0, 8).reduce((a, b) => a + b, 0);
  return { busy: total - t[3]! - t[4]!, total }; // less idle and iowait
}

interface Running {
  base: string;
  child: ChildProcess;
  env: NodeJS.ProcessEnv;
  dataDir: string;
}

export async function measureInstances(o: InstancesOptions, parts: InstancesParts): Promise<InstancesResults> {
  const schema = `bench_instances_${Date.now()}`;
  const running: Running[] = [];
  const start = async (extra: Record<string, string> = {}): Promise<Running> => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const dataDir = mkdtempSync(path.join(tmpdir(), "relay-bench-instance-"));
    const env = serverEnv(port, {
      SIMULATOR_ENABLED: "true",
      DATA_DIR: dataDir,
      DATABASE_URL: o.pgUrl,
      DATABASE_SCHEMA: schema,
      CREDENTIALS_KEY: "bench-instances-credentials-key-0123456789",
      ...extra,
    });
    if (!extra.BENCH_OBSERVABILITY_SWITCH) delete env.BENCH_OBSERVABILITY_SWITCH;
    const r = { base, child: spawnStart(port, env), env, dataDir };
    running.push(r);
    await waitUntilUp(`${base}/readyz`, r.child, "a bench instance did not become ready", 90_000);
    return r;
  };
  const stop = async (r: Running) => {
    await stopWithSigterm(r.child, "a bench instance", 40_000).catch((err: unknown) => console.error(String(err)));
    rmSync(r.dataDir, { recursive: true, force: true });
    running.splice(running.indexOf(r), 1);
  };
  const client = new pg.Client({ connectionString: o.pgUrl, options: `-c search_path="${schema}"` });
  await client.connect();
  const count = async (where: string) => Number((await client.query(`SELECT count(*)::int AS n FROM "OutboxItem" WHERE ${where}`)).rows[0].n);
  /** Waits (at most 5 minutes) until everything accepted so far is delivered. */
  const settled = async () => {
    for (let i = 0; i < 600 && (await count(`status IN ('pending', 'claimed')`)) > 0; i++) await sleep(500);
  };
  try {
    // Seeded as run.ts does: the operator CLI, then the simulated phone texts the line.
    const a = await start();
    // adminCliAsync, not adminCli: a blocked event loop misses the server closing idle
    // keep-alive sockets, and the next fetch then fails on one ("other side closed").
    await adminCliAsync(a.env, "account", "create", "--email", "instances@example.com");
    await adminCliAsync(a.env, "line", "create", "--account", "instances@example.com", "--handle", LINE, "--advanced");
    const key = await adminCliAsync(a.env, "key", "create", "--account", "instances@example.com", "--name", "bench", "--rate-limit", "100000000");
    const auth = { authorization: `Bearer ${key}` };
    const inbound = async (from: string) => {
      const res = await fetch(`${a.base}/api/simulator/messages`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: JSON.stringify({ line: LINE, from, text: "hello" }),
      });
      if (res.status !== 201) throw new Error(`seeding failed: ${res.status} ${await res.text()}`);
    };
    await inbound(CONTACT);
    for (let i = 0; i < 60; i += 6) await Promise.all(Array.from({ length: 6 }, (_, j) => inbound(`+1555200${String(i + j).padStart(4, "0")}`)));

    const post: Omit<LoadOptions, "url" | "connections" | "seconds"> = {
      method: "POST",
      headers: { ...auth, "content-type": "application/json" },
      body: JSON.stringify({ from: LINE, to: CONTACT, text: "bench" }),
    };
    /** Accepted sends/s with the load split over `targets` (one generator process each), median of rounds. */
    const accept = async (targets: Running[]) => {
      const share = Math.max(1, Math.round(o.connections / targets.length));
      await Promise.all(targets.map((t) => load({ ...post, url: `${t.base}/v1/messages`, connections: share, seconds: 2 }))); // warm-up
      const rounds: { rps: number; p99: number[]; errors: number; cores: number; machine: number }[] = [];
      for (let round = 0; round < o.rounds; round++) {
        await settled();
        const cpuBefore = targets.map((t) => cpuSeconds(t.child.pid!));
        const ticksBefore = machineTicks();
        const startedAt = performance.now();
        const results = await Promise.all(targets.map((t) => load({ ...post, url: `${t.base}/v1/messages`, connections: share, seconds: o.seconds })));
        const elapsed = (performance.now() - startedAt) / 1000;
        const cpu = targets.reduce((sum, t, n) => sum + cpuSeconds(t.child.pid!) - cpuBefore[n]!, 0);
        const ticks = machineTicks();
        rounds.push({
          rps: results.reduce((s, r) => s + r.rps, 0),
          p99: results.map((r) => r.p99),
          errors: results.reduce((s, r) => s + r.errors, 0),
          cores: cpu / elapsed,
          machine: ((ticks.busy - ticksBefore.busy) / (ticks.total - ticksBefore.total)) * cpus().length,
        });
      }
      await settled();
      rounds.sort((x, y) => x.rps - y.rps);
      return rounds[Math.floor(rounds.length / 2)]!;
    };
    /** A backlog of drainCount items inserted at once; the time until every running runner has delivered it. */
    const drain = async (tag: string) => {
      const target = (
        await client.query(
          `SELECT l.id AS line_id, l."accountId" AS account_id, c.id AS chat_id FROM "Line" l JOIN "Chat" c ON c."lineId" = l.id WHERE l.handle = $1 AND c.identifier = $2`,
          [LINE, CONTACT],
        )
      ).rows[0];
      const payload = { chat_id: target.chat_id, to: CONTACT, is_group: false, text: `drain ${tag}`, attachments: [], reply_to_guid: null };
      const prefix = `obx_${tag}`;
      await client.query(
        `INSERT INTO "OutboxItem" (id, "accountId", "lineId", kind, payload, status, "requestId")
         SELECT $1 || lpad(g::text, 30 - length($1), '0'), $2, $3, 'message', $4::jsonb, 'pending', 'req_bench_instances' FROM generate_series(1, $5::int) g`,
        [prefix, target.account_id, target.line_id, JSON.stringify(payload), o.drainCount],
      );
      const startedAt = performance.now();
      let done = 0;
      for (const deadline = Date.now() + 120_000; Date.now() < deadline; await sleep(100)) {
        done = await count(`id LIKE '${prefix}%' AND status IN ('sent', 'failed')`);
        if (done >= o.drainCount) break;
      }
      const seconds = (performance.now() - startedAt) / 1000;
      const stored = (
        await client.query(`SELECT count(*)::int AS n, count(DISTINCT "outboxId")::int AS items FROM "Message" WHERE "outboxId" LIKE $1`, [`${prefix}%`])
      ).rows[0];
      return { drained: done, drainSeconds: seconds, drainPerSecond: done / seconds, lost: o.drainCount - stored.items, duplicated: stored.n - stored.items };
    };
    const throughput = async (targets: Running[], tag: string): Promise<Throughput> => {
      const m = await accept(targets);
      return { instances: targets.length, acceptRps: m.rps, p99: m.p99, errors: m.errors, serverCores: m.cores, machineCores: m.machine, ...(await drain(tag)) };
    };

    let throughputs: InstancesResults["throughput"] = null;
    if (parts.throughput) {
      const one = await throughput([a], "1");
      const b = await start();
      const two = await throughput([a, b], "2");
      await stop(b);
      throughputs = { one, two };
    }
    await stop(a);
    if (!parts.observability) return { throughput: throughputs, observability: null };

    // The request log and metrics: one fresh instance whose hook SIGUSR2 switches off and on
    // (BENCH_OBSERVABILITY_SWITCH), measured both ways in turns. Two processes, one with and one
    // without, differ by more than that: run against each other with the same settings, two
    // identical instances here came out up to 7% apart.
    const r = await start({ BENCH_OBSERVABILITY_SWITCH: "true" });
    const chatsUrl = `${r.base}/v1/chats?from=${encodeURIComponent(LINE)}&limit=50`;
    const page = (await (await fetch(chatsUrl, { headers: auth })).json()) as { data?: unknown[] };
    if (page.data?.length !== 50) throw new Error(`expected a page of 50 chats, got ${JSON.stringify(page).slice(0, 200)}`);
    let on = true;
    /** Switches the hook and waits until /healthz (which sets no Request-Id itself) shows it. */
    const observe = async (want: boolean) => {
      if (on !== want) r.child.kill("SIGUSR2");
      on = want;
      for (const deadline = Date.now() + 5_000; ; await sleep(50)) {
        const res = await fetch(`${r.base}/healthz`);
        await res.arrayBuffer();
        if (res.headers.has("request-id") === want) return;
        if (Date.now() > deadline) throw new Error(`the request hook did not switch ${want ? "on" : "off"}`);
      }
    };
    const roundSeconds = o.seconds;
    const chats = async (seconds = roundSeconds) => {
      const before = cpuSeconds(r.child.pid!);
      const result = await load({ url: chatsUrl, headers: auth, connections: o.connections, seconds });
      return { result, cpuMs: ((cpuSeconds(r.child.pid!) - before) * 1000) / Math.max(1, result.requests) };
    };
    // Warm-up under the full load, both ways: a fresh process needs some 20-30 s of it before
    // its rate settles (measured here: the first rounds ran 10-25% below the later ones).
    const warmUpSeconds = 4 * Math.max(10, o.seconds);
    for (const want of [true, false, true, false]) {
      await observe(want);
      await chats(warmUpSeconds / 4);
    }
    const withLog: { result: LoadResult; cpuMs: number }[] = [];
    const withoutLog: { result: LoadResult; cpuMs: number }[] = [];
    // At least 12 rounds, each way first in turn, so drift in the machine's load hits both alike.
    for (let round = 0; round < Math.max(12, o.rounds); round++) {
      for (const want of round % 2 === 0 ? [true, false] : [false, true]) {
        await observe(want);
        (want ? withLog : withoutLog).push(await chats());
      }
    }
    await observe(true);
    const ratios = withLog.map((w, n) => 1 - w.result.rps / withoutLog[n]!.result.rps);
    return {
      throughput: throughputs,
      observability: {
        withLog: withLog.map((w) => w.result),
        withoutLog: withoutLog.map((w) => w.result),
        withLogCpuMs: withLog.map((w) => w.cpuMs),
        withoutLogCpuMs: withoutLog.map((w) => w.cpuMs),
        warmUpSeconds,
        roundSeconds,
        ratios,
        overhead: median(ratios),
        cpuOverhead: median(withLog.map((w, n) => w.cpuMs / withoutLog[n]!.cpuMs - 1)),
      },
    };
  } finally {
    for (const r of [...running]) await stop(r);
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch((err: unknown) => console.error(String(err)));
    await client.end();
  }
}

/** The parts' lines for npm run bench's report. */
export function instancesReport(r: InstancesResults, o: Pick<InstancesOptions, "connections" | "seconds" | "rounds" | "drainCount">): string[] {
  const row = (t: Throughput) =>
    `${String(t.instances).padStart(9)} ${t.acceptRps.toFixed(0).padStart(17)} ${t.p99.map((p) => p.toFixed(1)).join(" / ").padStart(14)} ${String(t.errors).padStart(7)} ${`${t.serverCores.toFixed(2)} / ${t.machineCores.toFixed(2)}`.padStart(26)} ${String(t.drained).padStart(8)} ${t.drainSeconds.toFixed(1).padStart(8)} ${t.drainPerSecond.toFixed(0).padStart(8)} ${String(t.lost).padStart(5)} ${String(t.duplicated).padStart(4)}`;
  const chats = (xs: LoadResult[], cpu: number[]) =>
    `${median(xs.map((x) => x.rps)).toFixed(0)} req/s (rounds: ${xs.map((x) => x.rps.toFixed(0)).join(", ")}; p99 ${median(xs.map((x) => x.p99)).toFixed(1)} ms; server CPU ${median(cpu).toFixed(3)} ms/req)`;
  const lines: string[] = [];
  if (r.throughput) {
    const { one, two } = r.throughput;
    lines.push(
      `\nInstances (PostgreSQL): POST /v1/messages from ${o.connections} connections in all (one load generator process per instance), ${o.seconds}s, median of ${o.rounds} rounds; drain of ${o.drainCount} items inserted at once`,
      `instances  sends accepted/s  p99 ms (each)  errors  cores busy: app / machine(${cpus().length})  drained  seconds  items/s  lost  dup`,
      row(one),
      row(two),
      `Two instances vs one: sends accepted x${(two.acceptRps / one.acceptRps).toFixed(2)}, drain x${(two.drainPerSecond / one.drainPerSecond).toFixed(2)}.`,
      `Note: ${cpus().length} cores here, shared by the app instances, PostgreSQL and the load generators (the autocannon CLI is itself a Node process). One instance runs its JavaScript on one core; a second can only use what the machine has left (machine cores busy above), so this ratio says nothing about scaling on separate machines.`,
    );
  }
  const obs = r.observability;
  if (obs) {
    lines.push(
      `\nRequest log + request metrics on GET /v1/chats (50), PostgreSQL, one instance switched by signal, ${o.connections} connections, ${obs.roundSeconds}s, ${obs.withLog.length} interleaved rounds after ${obs.warmUpSeconds}s of warm-up, stdout to /dev/null:`,
      `  with them (default):   ${chats(obs.withLog, obs.withLogCpuMs)}`,
      `  switched off:          ${chats(obs.withoutLog, obs.withoutLogCpuMs)}`,
      `  overhead on the rate (median of the rounds' ratios): ${(obs.overhead * 100).toFixed(1)}% (target < 5%) -> ${obs.overhead < 0.05 ? "met" : "NOT met"}; middle half of the rounds ${quartiles(obs.ratios).map((q) => `${(q * 100).toFixed(1)}%`).join(" to ")}`,
      `  server CPU per request (median of the rounds' ratios): ${obs.cpuOverhead >= 0 ? "+" : ""}${(obs.cpuOverhead * 100).toFixed(1)}%`,
    );
  }
  return lines;
}

// The MCP part of npm run bench (BENCH_PARTS=mcp; bench/run.ts calls measureMcp against a
// running `npm start`), on both databases. Two figures, from issue 27's targets:
//
// 1. send_message over MCP against POST /v1/messages: accepted sends per second, the same text
//    to the same contact with the same key, as interleaved rounds (BENCH_ROUNDS of
//    BENCH_SECONDS each, BENCH_CONNECTIONS connections; the runner drains the backlog between
//    rounds), median ratio. An MCP tool call answers HTTP 200 whether the tool succeeded or
//    refused, so every round also counts the outbox items it stored: the accepted rate is from
//    that count, and a round whose stored count differs from wrk's completed requests is named.
// 2. wait_for_reply holds no database connection: BENCH_MCP_WAITS (default 40) calls wait at
//    once (on as many keys, each call taking one stream slot), and while they wait the bench
//    reads the server's connections to PostgreSQL (its established sockets to port 5432, from
//    ss) and the statements running in the database (pg_stat_activity). Then each chat gets a
//    reply through the simulator and every wait must return it.
//
// Load comes from a separate process (wrk or the autocannon CLI, bench/load.ts); everything is
// on loopback and bounded in time. Nothing here asserts a time: the bench prints numbers.
import { execFileSync } from "node:child_process";
import pg from "pg";
import path from "node:path";
import { type Measured, measureWithCpu, run as runCommand } from "./load";

export interface McpTarget {
  database: "pglite" | "postgres";
  base: string;
  auth: Record<string, string>;
  account: string;
  line: string;
  contact: string;
  env: NodeJS.ProcessEnv;
  db: pg.ClientConfig;
  seconds: number;
  rounds: number;
  connections: number;
  serverPid: number;
  waits: number;
}

export interface McpRound {
  rest: Measured & { stored: number };
  mcp: Measured & { stored: number };
}

export interface McpResults {
  rounds: McpRound[];
  /** The median round by ratio. */
  median: McpRound;
  waits: {
    count: number;
    /** The server's database connections (PostgreSQL: its TCP sockets to the server; PGlite: its one, in process) before, and while every wait waited. */
    connectionsBefore: number;
    connectionsDuring: number;
    /** Statements running in the database while they waited (other than the probe itself). */
    activeDuring: number;
    replied: number;
    /** Milliseconds from the reply's POST to the wait's answer, p50 / max. */
    answerP50: number;
    answerMax: number;
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const TSX = "node_modules/.bin/tsx";

const rpc = (name: string, args: Record<string, unknown>, id = 1) => JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } });
const MCP_HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };

async function callTool(t: McpTarget, key: string, name: string, args: Record<string, unknown>): Promise<{ isError?: boolean; structuredContent?: Record<string, unknown> }> {
  const res = await fetch(`${t.base}/api/mcp`, { method: "POST", headers: { ...MCP_HEADERS, authorization: `Bearer ${key}` }, body: rpc(name, args) });
  const body = (await res.json()) as { result?: { isError?: boolean; structuredContent?: Record<string, unknown> }; error?: unknown };
  if (!body.result) throw new Error(`MCP ${name}: HTTP ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
  return body.result;
}

export async function measureMcp(t: McpTarget): Promise<McpResults> {
  // The operator CLI first: PGlite's socket serves one client at a time, so the bench connects
  // to the database only once the waiters' keys exist.
  const waiters = await seedWaiters(t);
  const client = new pg.Client({ ...t.db, query_timeout: 180_000 });
  await client.connect();
  try {
    const count = async () => Number((await client.query(`SELECT count(*)::int AS n FROM "OutboxItem"`)).rows[0].n);
    const pendingLeft = async () => Number((await client.query(`SELECT count(*)::int AS n FROM "OutboxItem" WHERE status IN ('pending','claimed')`)).rows[0].n);
    const drained = async () => {
      for (let i = 0; i < 600 && (await pendingLeft()) > 0; i++) await sleep(500);
    };
    const key = t.auth.authorization!.slice("Bearer ".length);
    const send = { from: t.line, to: t.contact, text: "bench" };
    // Both answer as they should before anything is measured.
    const first = await callTool(t, key, "send_message", send);
    if (first.isError) throw new Error(`send_message refused: ${JSON.stringify(first.structuredContent)}`);
    const run = async (url: string, body: string, headers: Record<string, string>) => {
      const before = await count();
      const m = await measureWithCpu(t.serverPid, { url, method: "POST", headers, body, connections: t.connections, seconds: t.seconds });
      const stored = (await count()) - before;
      // wrk counts completed requests; the ones in flight when it stopped were stored too (at most one per connection).
      if (stored < m.requests || stored > m.requests + t.connections) console.error(`mcp bench: ${url} completed ${m.requests} requests and stored ${stored} items`);
      return { ...m, stored };
    };
    const restRun = () => run(`${t.base}/v1/messages`, JSON.stringify(send), { ...t.auth, "content-type": "application/json" });
    const mcpRun = () => run(`${t.base}/api/mcp`, rpc("send_message", send), { ...t.auth, ...MCP_HEADERS });
    // Warm up both (JIT, caches).
    await measureWithCpu(t.serverPid, { url: `${t.base}/api/mcp`, method: "POST", headers: { ...t.auth, ...MCP_HEADERS }, body: rpc("send_message", send), connections: 8, seconds: 2 });
    await drained();
    const rounds: McpRound[] = [];
    for (let round = 0; round < t.rounds; round++) {
      await drained();
      const rest = await restRun();
      await drained();
      const mcp = await mcpRun();
      rounds.push({ rest, mcp });
    }
    const sorted = [...rounds].sort((a, b) => a.mcp.stored / a.rest.stored - b.mcp.stored / b.rest.stored);
    const median = sorted[Math.floor(sorted.length / 2)]!;
    await drained();
    return { rounds, median, waits: await measureWaits(t, client, waiters) };
  } finally {
    await client.end();
  }
}

interface Waiters {
  contacts: string[];
  keys: string[];
}

/** The waiting chats (a contact that wrote) and one key per wait: each wait takes one of its key's stream slots (MAX_STREAMS_PER_KEY). */
async function seedWaiters(t: McpTarget): Promise<Waiters> {
  const tsx = path.resolve(TSX);
  const admin = async (...args: string[]) => (await runCommand(tsx, ["scripts/admin.ts", ...args], t.env, 120_000)).trim().split("\n").pop()!;
  const contacts = Array.from({ length: t.waits }, (_, i) => `+1555300${String(i).padStart(4, "0")}`);
  for (const from of contacts) {
    const res = await fetch(`${t.base}/api/simulator/messages`, { method: "POST", headers: { ...t.auth, "content-type": "application/json" }, body: JSON.stringify({ line: t.line, from, text: "hello" }) });
    if (res.status !== 201) throw new Error(`seeding a waiting chat failed: ${res.status}`);
  }
  const keys: string[] = [];
  for (let i = 0; i < contacts.length; i++) keys.push(await admin("key", "create", "--account", t.account, "--name", `waiter ${i}`, "--rate-limit", "100000"));
  return { contacts, keys };
}

/** Many wait_for_reply calls at once: the database connections while they wait, then each is answered. */
async function measureWaits(t: McpTarget, client: pg.Client, { contacts, keys }: Waiters): Promise<McpResults["waits"]> {
  const connections = async () => {
    const active = Number((await client.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid() AND backend_type = 'client backend'`)).rows[0].n);
    if (t.database === "pglite") return { total: 1, active };
    // The server's own connections to PostgreSQL: its established TCP sockets to port 5432.
    const sockets = execFileSync("ss", ["-Htnp", "state", "established", "( dport = :5432 )"], { encoding: "utf8" });
    return { total: sockets.split("\n").filter((l) => l.includes(`pid=${t.serverPid},`)).length, active };
  };
  await sleep(1000);
  const before = await connections();
  const started = contacts.map((to, i) => callTool(t, keys[i]!, "wait_for_reply", { from: t.line, to, timeout_seconds: 60 }));
  await sleep(2000);
  let during = { total: 0, active: 0 };
  for (let i = 0; i < 5; i++) {
    const c = await connections();
    during = { total: Math.max(during.total, c.total), active: Math.max(during.active, c.active) };
    await sleep(200);
  }
  const sentAt = new Map<string, number>();
  for (const from of contacts) {
    sentAt.set(from, Date.now());
    await fetch(`${t.base}/api/simulator/messages`, { method: "POST", headers: { ...t.auth, "content-type": "application/json" }, body: JSON.stringify({ line: t.line, from, text: "the reply" }) });
  }
  const answered = await Promise.all(
    started.map(async (p, i) => {
      const r = await p;
      const ms = Date.now() - sentAt.get(contacts[i]!)!;
      const message = r.structuredContent?.message as { text?: string } | undefined;
      return { ok: !r.isError && r.structuredContent?.status === "replied" && message?.text === "the reply", ms };
    }),
  );
  const times = answered.map((a) => a.ms).sort((a, b) => a - b);
  return {
    count: t.waits,
    connectionsBefore: before.total,
    connectionsDuring: during.total,
    activeDuring: during.active,
    replied: answered.filter((a) => a.ok).length,
    answerP50: times[Math.floor(times.length / 2)] ?? 0,
    answerMax: times[times.length - 1] ?? 0,
  };
}

export function mcpReport(rows: { database: string; m: McpResults }[], o: { connections: number; seconds: number; rounds: number }): string[] {
  const out = [
    `\nMCP (target: send_message over MCP within 15% of POST /v1/messages, accepted sends/s; ${o.connections} connections, ${o.seconds}s, median of ${o.rounds} interleaved rounds)`,
    "database   POST /v1/messages req/s  stored/s  p99 ms  CPU ms/req   MCP send_message req/s  stored/s  p99 ms  CPU ms/req   MCP vs REST (stored/s)   every round",
  ];
  for (const { database, m } of rows) {
    const { rest, mcp } = m.median;
    const perSecond = (x: Measured & { stored: number }) => x.stored / (x.requests / x.rps);
    const ratio = (r: McpRound) => `${((perSecond(r.mcp) / perSecond(r.rest)) * 100).toFixed(0)}%`;
    out.push(
      `${database.padEnd(10)} ${rest.rps.toFixed(0).padStart(23)} ${perSecond(rest).toFixed(0).padStart(9)} ${rest.p99.toFixed(1).padStart(7)} ${rest.cpuMs.toFixed(2).padStart(11)} ${mcp.rps.toFixed(0).padStart(24)} ${perSecond(mcp).toFixed(0).padStart(9)} ${mcp.p99.toFixed(1).padStart(7)} ${mcp.cpuMs.toFixed(2).padStart(11)} ${ratio(m.median).padStart(24)}   ${m.rounds.map(ratio).join(" ")}`,
    );
  }
  out.push("\nwait_for_reply: many waits at once, the server's database connections while they wait, then a reply to each");
  out.push("database   waits  connections before  during (total/active)  replied  answer after the reply p50/max ms");
  for (const { database, m } of rows) {
    const w = m.waits;
    out.push(
      `${database.padEnd(10)} ${String(w.count).padStart(5)} ${String(w.connectionsBefore).padStart(19)} ${`${w.connectionsDuring}/${w.activeDuring}`.padStart(22)} ${`${w.replied}/${w.count}`.padStart(8)} ${`${w.answerP50}/${w.answerMax}`.padStart(36)}`,
    );
  }
  return out;
}

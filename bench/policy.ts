// Send-policy measurements for npm run bench (BENCH_PARTS=policy; bench/run.ts calls
// measurePolicy against a running `npm start`). Four figures, each from the issue's targets:
//
// 1. The policy check's cost: accepted POST /v1/messages per second on the default line
//    (default policy: contact_first, so the claim-time step has nothing to judge) against a
//    second simulated line whose policy makes the step run for every message (contact_first
//    false, new-contact budgets far above what the bench sends, quiet hours in a window that is
//    not active now), to contacts that already wrote. Rounds interleaved, median ratio. The
//    step runs in the runner, after the accept: so each run also waits until the runner has
//    sent what was accepted, and reports messages/s over that time and CPU per message (the
//    server's, and on PostgreSQL its own backends', which are another process).
// 2. Scheduling: the same rounds also send with `send_at` one day ahead (held from the start).
//    Then the held count is brought to BENCH_POLICY_HELD (100,000) with SQL (status 'held',
//    holdReason 'scheduled', availableAt a day ahead, as writes.ts queues its drain; then on
//    PostgreSQL VACUUM ANALYZE, as autovacuum would; PGlite runs no autovacuum), and the idle
//    CPU (ms per second, /proc: the server and its PostgreSQL backends) is compared with the
//    idle CPU before anything was held.
// 3. A due burst: BENCH_BURST_LINES (10) BlueBubbles lines (a minimal BlueBubbles stub per line
//    in this process, answering the probe, webhook registration, catch-up and text sends at
//    once), created by the operator CLI with `--rate BENCH_BURST_RATE` (50; the column the
//    policy's rate_per_second sets), BENCH_BURST_ITEMS (1,000) items held per line (with SQL),
//    all made due at the same instant T three seconds ahead by one UPDATE, while the held
//    items of 2. stay held. Measured: the first send's time after T, sends before T (at the
//    stubs, and in the database: releasedAt, attemptStartedAt or Message.sentAt before availableAt), each line's
//    achieved rate and its gaps between sends (at the stub, and between claims in the
//    database), the time until the last send, lost (marked sent without a Message or never
//    received by the stub), not sent when the time bound (eight times the paced time, plus
//    30 s) ended the wait, duplicated (Messages per outbox ID, and the stubs' count of sends
//    per tempGuid).
// 4. GET /v1/capacity?from=<line>: p50/p99 at one connection and requests/s at
//    BENCH_CONNECTIONS, for the line holding the held items and for the policy line, with GET
//    /v1/lines beside them for reference.
//
// Load comes from a separate process (wrk or the autocannon CLI, bench/load.ts); everything is
// on loopback and bounded in time. Nothing here asserts a time: the bench prints numbers.
import { randomUUID } from "node:crypto";
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import pg from "pg";
import { cpuSeconds, load, type LoadResult, type Measured, measureWithCpu, run } from "./load";

export interface AcceptRun extends Measured {
  /** Server CPU ms per accepted request, from the load's start until the runner had sent what it accepted. */
  cpuMsWithDelivery: number;
  /** The same for the server's PostgreSQL backends (0 on PGlite, whose work is the server's own CPU). */
  dbCpuMs: number;
  /** Accepted requests over the time from the load's start until the runner had sent them (held ones: not waited for). */
  throughput: number;
}

export interface PolicyRound {
  plain: AcceptRun;
  policy: AcceptRun;
  scheduled: AcceptRun;
}

export interface BurstResults {
  lines: number;
  perLine: number;
  rate: number;
  /** How far ahead of the UPDATE that made them due T was (ms). */
  leadMs: number;
  /** The first send at a stub after T (ms; negative: early). */
  firstAfterMs: number | null;
  /** Sends that reached a stub before T. */
  earlyAtStub: number;
  /** Items released (releasedAt), claimed (attemptStartedAt) or sent (Message.sentAt) before their availableAt, in the database. */
  earlyInDb: number;
  /** From T to the last send at a stub, and to the last completedAt in the database (s). */
  seconds: number;
  dbSeconds: number;
  sent: number;
  failed: number;
  /** Marked sent but with no Message, or never received by the provider. */
  lost: number;
  /** Not sent (nor failed) when the part's time bound ended the wait. */
  waiting: number;
  duplicatedMessages: number;
  duplicatedAtStub: number;
  /** Each line's achieved rate (sends - 1 over first-to-last), sorted. */
  lineRates: number[];
  /** Each line's smallest gap between two consecutive sends (ms), the smallest of all lines. */
  minGapMs: number;
  /** The median gap between two consecutive sends of a line, over every line (ms). */
  medianGapMs: number;
  /** The smallest gap between two consecutive claims of a line, in the database (attemptStartedAt: the pacing slot as the server takes it), ms. */
  minClaimGapMs: number;
  /** Server CPU ms per item sent, from T until the last item was recorded; and its PostgreSQL backends'. */
  cpuMsPerItem: number;
  dbCpuMsPerItem: number;
  /** Whether the deadline (a bound on the part) stopped the wait before everything was sent. */
  timedOut: boolean;
  unknownRoutes: string[];
}

export interface CapacityRow {
  what: string;
  held: number;
  one: LoadResult;
  many: LoadResult;
}

export interface PolicyResults {
  rounds: PolicyRound[];
  /** Medians over the rounds. */
  plainRps: number;
  policyRps: number;
  scheduledRps: number;
  /** Median of the per-round ratios to the plain run of the same round. */
  policyRatio: number;
  scheduledRatio: number;
  /** Items the policy line's rounds left held (should be 0: nothing the policy there may hold). */
  policyHeld: number;
  /** Items accepted on the default and policy lines but not sent once the runner drained. */
  unsent: number;
  heldBeforeFill: number;
  held: number;
  fillSeconds: number;
  idleSeconds: number;
  /** Server CPU ms per second while idle, before any item was held and with `held` held; and its PostgreSQL backends'. */
  idleBefore: number;
  idleAfter: number;
  idleDbBefore: number;
  idleDbAfter: number;
  capacity: CapacityRow[];
  burst: BurstResults | null;
}

interface Target {
  database: "pglite" | "postgres";
  base: string;
  auth: Record<string, string>;
  /** The account's email (the bench's lines are created in it). */
  account: string;
  /** The seeded default line (contacts +1555100xxxx wrote to it). */
  line: string;
  /** The server's environment, for the operator CLI. */
  env: NodeJS.ProcessEnv;
  db: pg.ClientConfig;
  seconds: number;
  rounds: number;
  connections: number;
  serverPid: number;
  /** Held items the idle measurement is made with. */
  held: number;
  idleSeconds: number;
  burst: { lines: number; perLine: number; rate: number } | null;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const POLICY_LINE = "+15550009300";
const CONTACT = "+15551000000";
const PASSWORD = "bench-pw";
/** The events the server registers a BlueBubbles line's webhook for (server/platform/bluebubbles/index.ts WEBHOOK_EVENTS). */
const WEBHOOK_EVENTS = ["new-message", "updated-message", "typing-indicator", "chat-read-status-changed", "message-send-error"];
const DAY_MS = 86_400_000;
/** Contacts per burst line (its items go to them in turn). */
const BURST_CHATS = 20;
/** T is this far ahead of the UPDATE that makes the burst due. */
const BURST_LEAD_MS = 3_000;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** "HH:MM" in UTC, `hoursAhead` hours from now. */
function utcClock(hoursAhead: number): string {
  const d = new Date(Date.now() + hoursAhead * 3_600_000);
  return `${String(d.getUTCHours()).padStart(2, "0")}:${String(d.getUTCMinutes()).padStart(2, "0")}`;
}

interface BurstStub {
  url: string;
  /** Arrival times (Date.now()) of the text sends, by tempGuid. */
  sends: Map<string, number[]>;
  unknown: string[];
  close: () => Promise<void>;
}

/**
 * A BlueBubbles server stub (one per line: each line registers its own webhook) answering
 * what connecting, probing and catch-up ask, and text sends at once with the sent message.
 */
async function startBurstStub(): Promise<BurstStub> {
  const sends = new Map<string, number[]>();
  const unknown: string[] = [];
  let registered: string | null = null;
  let rowId = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://stub");
      const send = (body: unknown, status = 200) => res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
      if (url.searchParams.get("password") !== PASSWORD) return send({ status: 401, message: "Unauthorized" }, 401);
      const body = () => JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}") as Record<string, unknown>;
      switch (`${req.method} ${url.pathname}`) {
        case "GET /api/v1/ping":
          return send({ status: 200, message: "Ping received!", data: "pong" });
        case "GET /api/v1/server/info":
          return send({
            status: 200,
            message: "Success",
            data: {
              computer_id: "x",
              os_version: "15.5",
              server_version: "1.9.9",
              private_api: true,
              helper_connected: true,
              proxy_service: null,
              detected_icloud: null,
              detected_imessage: null,
              macos_time_sync: null,
              local_ipv4s: [],
              local_ipv6s: [],
            },
          });
        case "GET /api/v1/webhook":
          return send({ status: 200, message: "Success", data: registered ? [{ id: 1, url: registered, events: WEBHOOK_EVENTS, created: "2026-01-01T00:00:00.000Z" }] : [] });
        case "POST /api/v1/webhook":
          registered = String(body().url ?? "");
          return send({ status: 200, message: "ok", data: { id: 1, url: registered, events: WEBHOOK_EVENTS, created: "2026-01-01T00:00:00.000Z" } });
        case "DELETE /api/v1/webhook/1":
          registered = null;
          return send({ status: 200, message: "Successfully deleted webhook!" });
        case "POST /api/v1/message/query":
          return send({ status: 200, message: "Success", data: [], metadata: { offset: 0, limit: 500, total: 0, count: 0 } });
        case "POST /api/v1/message/text": {
          const now = Date.now();
          const b = body() as { chatGuid?: string; tempGuid?: string; message?: string };
          const tempGuid = b.tempGuid ?? "";
          sends.set(tempGuid, [...(sends.get(tempGuid) ?? []), now]);
          const chatGuid = b.chatGuid ?? "iMessage;-;+15550000000";
          const address = chatGuid.split(";").pop() ?? "";
          rowId++;
          return send({
            status: 200,
            message: "Message sent!",
            data: {
              originalROWID: rowId,
              guid: `BENCH-${randomUUID().toUpperCase()}`,
              text: b.message ?? "",
              attributedBody: null,
              handle: { originalROWID: 1, address, service: "iMessage", uncanonicalizedId: null, country: "us" },
              handleId: 1,
              otherHandle: 0,
              attachments: [],
              subject: null,
              error: 0,
              dateCreated: now,
              dateRead: null,
              dateDelivered: null,
              isDelivered: false,
              isFromMe: true,
              hasDdResults: false,
              isArchived: false,
              itemType: 0,
              groupTitle: null,
              groupActionType: 0,
              balloonBundleId: null,
              associatedMessageGuid: null,
              associatedMessageType: null,
              expressiveSendStyleId: null,
              threadOriginatorGuid: null,
              hasPayloadData: false,
              chats: [{ originalROWID: 1, guid: chatGuid, style: 45, chatIdentifier: address, isArchived: false, displayName: "" }],
              tempGuid,
            },
          });
        }
        default:
          unknown.push(`${req.method} ${url.pathname}`);
          return send({ status: 404, message: "Not Found" }, 404);
      }
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    sends,
    unknown,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A process's CPU seconds (user + system), from /proc; 0 once it has exited. */
export function processCpu(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/** The process and its descendants. */
function processTree(rootPid: number): number[] {
  const parent = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      parent.set(Number(entry), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      // exited meanwhile
    }
  }
  const out = [rootPid];
  for (let i = 0; i < out.length; i++) for (const [pid, ppid] of parent) if (ppid === out[i]) out.push(pid);
  return out;
}

/**
 * The PostgreSQL backends (pids) serving the server's own connections: the local ports of the
 * server's sockets to the database's port (/proc/<pid>/fd, /proc/net/tcp), matched to
 * pg_stat_activity.client_port. On PostgreSQL the database's work is another process's CPU,
 * which the server's own figure leaves out; these are the backends of this server only (the
 * database is shared with other work on this machine).
 */
export async function serverBackends(client: pg.Client, serverPid: number, dbPort: number): Promise<number[]> {
  const inodes = new Set<string>();
  for (const pid of processTree(serverPid)) {
    let fds: string[] = [];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const link = readlinkSync(`/proc/${pid}/fd/${fd}`);
        if (link.startsWith("socket:[")) inodes.add(link.slice(8, -1));
      } catch {
        // closed meanwhile
      }
    }
  }
  const ports: number[] = [];
  for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text = "";
    try {
      text = readFileSync(file, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || !inodes.has(f[9]!)) continue;
      const remotePort = parseInt(f[2]!.split(":")[1]!, 16);
      if (remotePort === dbPort) ports.push(parseInt(f[1]!.split(":")[1]!, 16));
    }
  }
  if (!ports.length) return [];
  const { rows } = await client.query(`SELECT pid FROM pg_stat_activity WHERE client_port = ANY($1::int[])`, [ports]);
  return rows.map((r: { pid: number }) => r.pid);
}

/** CPU of the server and (PostgreSQL) of its database backends, to be differenced. */
type CpuMark = { server: number; backends: Map<number, number> };

export async function measurePolicy(t: Target): Promise<PolicyResults> {
  const tsx = path.resolve("node_modules/.bin/tsx");
  const admin = async (...args: string[]) => (await run(tsx, ["scripts/admin.ts", ...args], t.env, 120_000)).trim().split("\n").pop()!;
  const headers = { ...t.auth, "content-type": "application/json" };
  const say = (what: string) => console.error(`[policy] ${t.database}: ${what}`);
  const stubs: BurstStub[] = [];
  // Connected only after the operator CLI has run: PGlite's socket serves one client at a time.
  // A query bound: a database that stops answering (embedded PGlite once hung here, spinning
  // inside an INSERT) fails the part instead of stalling the bench.
  const client = new pg.Client({ ...t.db, query_timeout: 180_000 });
  client.on("error", (err) => say(`database connection: ${err.message}`));
  let connected = false;
  try {
    // 1. The policy line: the claim-time step runs for every message (contact_first false,
    //    budgets it never reaches, quiet hours from 6 to 7 hours from now, UTC: not active).
    await admin("line", "create", "--account", t.account, "--handle", POLICY_LINE);
    const quiet = { start: utcClock(6), end: utcClock(7), timezone: "UTC" };
    const policy = { contact_first: false, new_contacts_per_hour: 100_000, new_contacts_per_day: 100_000, quiet_hours: quiet };
    await admin("line", "policy", "--line", POLICY_LINE, "--json", JSON.stringify(policy));

    // 2. The burst's provider lines, connected through the operator CLI to their stubs, paced.
    const burstLines: { id: string; stub: BurstStub }[] = [];
    if (t.burst) {
      for (let i = 0; i < t.burst.lines; i++) {
        const stub = await startBurstStub();
        stubs.push(stub);
        const id = await admin(
          "line", "create", "--account", t.account, "--handle", `+155500094${String(i).padStart(2, "0")}`,
          "--provider", "bluebubbles", "--provider-config", JSON.stringify({ url: stub.url, password: PASSWORD }), "--rate", String(t.burst.rate),
        );
        if (!id.startsWith("ln_")) throw new Error(`creating burst line ${i} printed ${id}`);
        burstLines.push({ id, stub });
      }
    }

    // 3. The contacts write to the policy line first (the default line was seeded by run.ts).
    for (let i = 0; i < 10; i++) {
      const res = await fetch(`${t.base}/api/simulator/messages`, {
        method: "POST",
        headers,
        body: JSON.stringify({ line: POLICY_LINE, from: `+1555100${String(i).padStart(4, "0")}`, text: `hello ${i}` }),
      });
      if (res.status !== 201) throw new Error(`seeding the policy line failed: ${res.status} ${await res.text()}`);
    }
    // Lines are cached briefly (API_KEY_CACHE_SECONDS, default 5): let every cached copy expire.
    await sleep(6_000);
    const capacity = await (await fetch(`${t.base}/v1/capacity?from=${encodeURIComponent(POLICY_LINE)}`, { headers: t.auth })).json();
    const seen = capacity.lines?.[0];
    if (seen?.new_contacts?.hour?.limit !== 100_000 || seen?.quiet_hours?.active !== false) {
      throw new Error(`the policy line's capacity does not show its policy: ${JSON.stringify(capacity).slice(0, 400)}`);
    }

    await client.connect();
    connected = true;
    say("lines ready; idle CPU, then the accept rounds");
    const count = async (where: string, params: unknown[] = []) =>
      Number((await client.query(`SELECT count(*)::int AS n FROM "OutboxItem" WHERE ${where}`, params)).rows[0].n);
    /** Waits (at most 5 minutes) until the runner has sent everything due. */
    const drained = async () => {
      for (let i = 0; i < 600 && (await count(`status IN ('pending','claimed')`)) > 0; i++) await sleep(250);
    };
    const dbPort = t.database === "postgres" ? Number(new URL(String(t.db.connectionString)).port || 5432) : 0;
    const mark = async (): Promise<CpuMark> => {
      const backends = new Map<number, number>();
      if (dbPort) for (const pid of await serverBackends(client, t.serverPid, dbPort)) backends.set(pid, processCpu(pid));
      return { server: cpuSeconds(t.serverPid), backends };
    };
    /** CPU seconds since `before`: the server's, and its backends' (a backend that appeared meanwhile counts whole). */
    const since = async (before: CpuMark): Promise<{ server: number; db: number }> => {
      const after = await mark();
      let db = 0;
      for (const [pid, cpu] of after.backends) db += cpu - (before.backends.get(pid) ?? 0);
      return { server: after.server - before.server, db };
    };
    const idleCpu = async (): Promise<{ server: number; db: number }> => {
      await drained();
      await sleep(2_000);
      const before = await mark();
      const started = performance.now();
      await sleep(t.idleSeconds * 1000);
      const used = await since(before);
      const seconds = (performance.now() - started) / 1000;
      return { server: (used.server * 1000) / seconds, db: (used.db * 1000) / seconds };
    };

    const body = (from: string, sendAt?: number) => JSON.stringify({ from, to: CONTACT, text: "policy bench", ...(sendAt ? { send_at: sendAt } : {}) });
    const plainBody = body(t.line);
    const policyBody = body(POLICY_LINE);
    const scheduledBody = body(t.line, Date.now() + DAY_MS);
    for (const b of [plainBody, policyBody]) {
      const res = await fetch(`${t.base}/v1/messages`, { method: "POST", headers, body: b });
      if (!res.ok) throw new Error(`POST /v1/messages answered ${res.status}: ${await res.text()}`);
    }
    // Warm-up (JIT, caches) of the two unscheduled kinds, not counted; then idle, nothing held.
    for (const b of [plainBody, policyBody]) await load({ url: `${t.base}/v1/messages`, method: "POST", headers, body: b, connections: 8, seconds: 2 });
    const heldAtStart = await count(`status = 'held'`);
    const idleBefore = await idleCpu();

    // 4. Interleaved rounds: default line, policy line, scheduled on the default line.
    const accept = async (b: string): Promise<AcceptRun> => {
      await drained();
      const before = await mark();
      const started = performance.now();
      const m = await measureWithCpu(t.serverPid, { url: `${t.base}/v1/messages`, method: "POST", headers, body: b, connections: t.connections, seconds: t.seconds });
      await drained();
      const seconds = (performance.now() - started) / 1000;
      const used = await since(before);
      const n = Math.max(1, m.requests);
      return { ...m, cpuMsWithDelivery: (used.server * 1000) / n, dbCpuMs: (used.db * 1000) / n, throughput: m.requests / seconds };
    };
    const rounds: PolicyRound[] = [];
    for (let r = 0; r < t.rounds; r++) {
      const plain = await accept(plainBody);
      const policyRun = await accept(policyBody);
      const scheduled = await accept(scheduledBody);
      rounds.push({ plain, policy: policyRun, scheduled });
    }
    const { rows: lineRows } = await client.query(`SELECT id, handle FROM "Line" WHERE handle = ANY($1::text[])`, [[t.line, POLICY_LINE]]);
    const lineId = (handle: string) => (lineRows as { id: string; handle: string }[]).find((l) => l.handle === handle)!.id;
    const policyHeld = await count(`"lineId" = $1 AND status = 'held'`, [lineId(POLICY_LINE)]);
    const unsent = await count(`"lineId" = ANY($1::text[]) AND status IN ('pending','claimed','failed')`, [[lineId(t.line), lineId(POLICY_LINE)]]);

    say(`rounds done; filling the held items to ${t.held}`);
    // 5. Bring the held count to t.held (scheduled a day ahead on the default line), then idle again.
    const heldBeforeFill = await count(`status = 'held'`);
    const { rows: chatRows } = await client.query(
      `SELECT l.id AS line_id, l."accountId" AS account_id, c.id AS chat_id FROM "Line" l JOIN "Chat" c ON c."lineId" = l.id WHERE l.handle = $1 AND c.identifier = $2`,
      [t.line, CONTACT],
    );
    const { line_id, account_id, chat_id } = chatRows[0];
    const payload = { chat_id, to: CONTACT, is_group: false, text: "held", attachments: [], reply_to_guid: null, is_audio_message: false };
    const fillStarted = performance.now();
    const toInsert = Math.max(0, t.held - heldBeforeFill);
    for (let done = 0; done < toInsert; done += 20_000) {
      await client.query(
        `INSERT INTO "OutboxItem" (id, "accountId", "lineId", kind, payload, "chatId", status, "holdReason", "availableAt", "requestId")
         SELECT 'obx_zh' || lpad(g::text, 24, '0'), $1, $2, 'message', $3::jsonb, $4, 'held', 'scheduled', $5::timestamptz + (g || ' milliseconds')::interval, 'req_bench'
         FROM generate_series($6::int, $7::int) g`,
        [account_id, line_id, JSON.stringify(payload), chat_id, new Date(Date.now() + DAY_MS), done + 1, Math.min(toInsert, done + 20_000)],
      );
    }
    const fillSeconds = (performance.now() - fillStarted) / 1000;
    // On PostgreSQL, the table as autovacuum leaves it once 100,000 sends were scheduled over
    // time (statistics, visibility map). Embedded PGlite runs no autovacuum and the server never
    // analyzes: its tables are left as production leaves them.
    if (t.database === "postgres") await client.query(`VACUUM ANALYZE "OutboxItem"`);
    const held = await count(`status = 'held'`);
    const idleAfter = await idleCpu();

    say(`${held} held; capacity`);
    // 6. Capacity: the line holding everything, and the policy line (budgets and quiet hours read).
    const capacityRows: CapacityRow[] = [];
    for (const [what, url] of [
      ["default line", `${t.base}/v1/capacity?from=${encodeURIComponent(t.line)}`],
      ["policy line", `${t.base}/v1/capacity?from=${encodeURIComponent(POLICY_LINE)}`],
      // A reference on the same machine at the same moment: an authenticated read of the same shell.
      ["GET /v1/lines", `${t.base}/v1/lines`],
    ] as const) {
      const res = await fetch(url, { headers: t.auth });
      if (res.status !== 200) throw new Error(`GET ${url} answered ${res.status}: ${await res.text()}`);
      const c = await res.json();
      const lineHeld = c.object === "capacity" ? Object.values(c.lines[0].queued as Record<string, number>).reduce((a, b) => a + b, 0) : 0;
      await load({ url, headers: t.auth, connections: 1, seconds: 2 });
      const one = await load({ url, headers: t.auth, connections: 1, seconds: t.seconds });
      const many = await load({ url, headers: t.auth, connections: t.connections, seconds: t.seconds });
      capacityRows.push({ what, held: lineHeld, one, many });
    }

    say("the due burst");
    // 7. The due burst.
    const burst = t.burst && burstLines.length ? await measureBurst(client, t, burstLines, mark, since) : null;

    const pick = (f: (r: PolicyRound) => number) => median(rounds.map(f));
    if (heldAtStart !== 0) console.error(`[policy] ${heldAtStart} items were already held before the rounds`);
    return {
      rounds,
      plainRps: pick((r) => r.plain.rps),
      policyRps: pick((r) => r.policy.rps),
      scheduledRps: pick((r) => r.scheduled.rps),
      policyRatio: pick((r) => r.policy.rps / r.plain.rps),
      scheduledRatio: pick((r) => r.scheduled.rps / r.plain.rps),
      policyHeld,
      unsent,
      heldBeforeFill,
      held,
      fillSeconds,
      idleSeconds: t.idleSeconds,
      idleBefore: idleBefore.server,
      idleAfter: idleAfter.server,
      idleDbBefore: idleBefore.db,
      idleDbAfter: idleAfter.db,
      capacity: capacityRows,
      burst,
    };
  } finally {
    if (connected) await client.end();
    for (const stub of stubs) await stub.close();
  }
}

async function measureBurst(
  client: pg.Client,
  t: Target,
  lines: { id: string; stub: BurstStub }[],
  mark: () => Promise<CpuMark>,
  since: (before: CpuMark) => Promise<{ server: number; db: number }>,
): Promise<BurstResults> {
  const { lines: n, perLine, rate } = t.burst!;
  const account = (await client.query(`SELECT "accountId" AS id FROM "Line" WHERE id = $1`, [lines[0]!.id])).rows[0].id as string;
  const paced = await client.query(`SELECT count(*)::int AS n FROM "Line" WHERE id = ANY($1::text[]) AND "sendRatePerSecond" = $2`, [lines.map((l) => l.id), rate]);
  if (paced.rows[0].n !== lines.length) throw new Error(`the burst lines are not all paced at ${rate}/s`);
  // Each line's chats (contacts that wrote, with the BlueBubbles chat GUID), then its items, held a day ahead.
  for (const [i, line] of lines.entries()) {
    await client.query(
      `INSERT INTO "Chat" (id, "accountId", "lineId", identifier, service, "isGroup", participants, "hasReceivedInbound", "providerChatId", "lastMessageAt")
       SELECT 'cht_zb' || lpad($3::text, 2, '0') || lpad(k::text, 22, '0'), $1, $2, '+1555400' || lpad($3::text, 2, '0') || lpad(k::text, 2, '0'),
              'imessage', false, ARRAY['+1555400' || lpad($3::text, 2, '0') || lpad(k::text, 2, '0')], true,
              'iMessage;-;+1555400' || lpad($3::text, 2, '0') || lpad(k::text, 2, '0'), now()
       FROM generate_series(0, $4::int - 1) k`,
      [account, line.id, i, BURST_CHATS],
    );
    await client.query(
      `INSERT INTO "OutboxItem" (id, "accountId", "lineId", kind, payload, "chatId", status, "holdReason", "availableAt", "requestId")
       SELECT 'obx_zb' || lpad($3::text, 2, '0') || lpad(g::text, 22, '0'), $1, $2, 'message',
              jsonb_build_object('chat_id', c.id, 'to', c.identifier, 'is_group', false, 'text', 'burst ' || g, 'attachments', '[]'::jsonb,
                                 'reply_to_guid', null, 'is_audio_message', false),
              c.id, 'held', 'scheduled', now() + interval '1 day', 'req_bench'
       FROM generate_series(1, $4::int) g
       JOIN "Chat" c ON c.id = 'cht_zb' || lpad($3::text, 2, '0') || lpad((g % $5::int)::text, 22, '0')`,
      [account, line.id, i, perLine, BURST_CHATS],
    );
  }
  const total = n * perLine;
  // The items by line (every item on these lines is the burst's; ("lineId", status, id) and
  // Message's ("lineId", ...) indexes answer whatever the statistics: on PGlite a query of the
  // bench runs inside the server's own database, and a long scan would stall the server).
  const lineIds = lines.map((l) => l.id);
  // All due at the same instant T, a few seconds ahead.
  const updateStarted = Date.now();
  const T = updateStarted + BURST_LEAD_MS;
  await client.query(`UPDATE "OutboxItem" SET "availableAt" = $1 WHERE "lineId" = ANY($2::text[]) AND status = 'held'`, [new Date(T), lineIds]);
  const leadMs = T - Date.now();
  const cpuBefore = await mark();
  const received = () => lines.reduce((s, l) => s + l.stub.sends.size, 0);
  // Bounded: eight times the paced time, and half a minute.
  const deadline = T + 8 * (perLine / rate) * 1000 + 30_000;
  while (Date.now() < deadline && received() < total) await sleep(200);
  const recorded = async () =>
    Number((await client.query(`SELECT count(*)::int AS n FROM "OutboxItem" WHERE "lineId" = ANY($1::text[]) AND status IN ('sent','failed')`, [lineIds])).rows[0].n);
  while (Date.now() < deadline && (await recorded()) < total) await sleep(1_000);
  const timedOut = Date.now() >= deadline;
  const cpu = await since(cpuBefore);
  await sleep(1_000); // late duplicates, if any

  const items = (
    await client.query(`SELECT id, "lineId", status, "availableAt", "releasedAt", "attemptStartedAt", "completedAt" FROM "OutboxItem" WHERE "lineId" = ANY($1::text[])`, [lineIds])
  ).rows as { id: string; lineId: string; status: string; availableAt: Date; releasedAt: Date | null; attemptStartedAt: Date | null; completedAt: Date | null }[];
  const messages = (await client.query(`SELECT "outboxId", "sentAt" FROM "Message" WHERE "lineId" = ANY($1::text[]) AND "isFromMe"`, [lineIds])).rows as {
    outboxId: string;
    sentAt: Date;
  }[];
  const messagesOf = new Map<string, Date[]>();
  for (const m of messages) {
    const list = messagesOf.get(m.outboxId) ?? [];
    list.push(m.sentAt);
    messagesOf.set(m.outboxId, list);
  }
  const sent = items.filter((i) => i.status === "sent").length;
  const failed = items.filter((i) => i.status === "failed").length;
  const lastCompleted = Math.max(0, ...items.map((i) => (i.completedAt ? i.completedAt.getTime() : 0)));
  // Lost: marked sent without a Message, or without the provider (the stub) ever receiving it.
  const atStub = new Set(lines.flatMap((l) => [...l.stub.sends.keys()]));
  const lost = items.filter((i) => i.status === "sent" && (!messagesOf.has(i.id) || !atStub.has(i.id))).length;
  const duplicatedMessages = [...messagesOf.values()].reduce((s, m) => s + m.length - 1, 0);
  // Early in the database: released (releasedAt), claimed (attemptStartedAt) or sent (Message.sentAt, the provider's time) before availableAt.
  const earlyInDb = items.filter(
    (i) =>
      (i.releasedAt && i.releasedAt.getTime() < i.availableAt.getTime()) ||
      (i.attemptStartedAt && i.attemptStartedAt.getTime() < i.availableAt.getTime()) ||
      (messagesOf.get(i.id) ?? []).some((at) => at.getTime() < i.availableAt.getTime()),
  ).length;
  // The smallest gap between two claims of a line: the pacing slot as the server takes it.
  let minClaimGapMs = Infinity;
  const claimsOf = new Map<string, number[]>();
  for (const i of items) {
    if (!i.attemptStartedAt) continue;
    const list = claimsOf.get(i.lineId) ?? [];
    list.push(i.attemptStartedAt.getTime());
    claimsOf.set(i.lineId, list);
  }
  for (const claims of claimsOf.values()) {
    claims.sort((a, b) => a - b);
    for (let k = 1; k < claims.length; k++) minClaimGapMs = Math.min(minClaimGapMs, claims[k]! - claims[k - 1]!);
  }
  let earlyAtStub = 0;
  let duplicatedAtStub = 0;
  let first = Infinity;
  let last = 0;
  let minGapMs = Infinity;
  const lineRates: number[] = [];
  const gaps: number[] = [];
  const unknownRoutes: string[] = [];
  for (const { stub } of lines) {
    const times: number[] = [];
    for (const [guid, at] of stub.sends) {
      if (!guid.startsWith("obx_zb")) continue;
      duplicatedAtStub += at.length - 1;
      times.push(...at);
    }
    times.sort((a, b) => a - b);
    earlyAtStub += times.filter((x) => x < T).length;
    if (times.length) {
      first = Math.min(first, times[0]!);
      last = Math.max(last, times[times.length - 1]!);
    }
    for (let i = 1; i < times.length; i++) {
      minGapMs = Math.min(minGapMs, times[i]! - times[i - 1]!);
      gaps.push(times[i]! - times[i - 1]!);
    }
    lineRates.push(times.length > 1 ? ((times.length - 1) * 1000) / (times[times.length - 1]! - times[0]!) : 0);
    unknownRoutes.push(...stub.unknown);
  }
  lineRates.sort((a, b) => a - b);
  return {
    lines: n,
    perLine,
    rate,
    leadMs,
    firstAfterMs: Number.isFinite(first) ? first - T : null,
    earlyAtStub,
    earlyInDb,
    seconds: (last - T) / 1000,
    dbSeconds: (lastCompleted - T) / 1000,
    sent,
    failed,
    lost,
    waiting: total - sent - failed,
    duplicatedMessages,
    duplicatedAtStub,
    lineRates,
    minGapMs: Number.isFinite(minGapMs) ? minGapMs : 0,
    medianGapMs: gaps.length ? median(gaps) : 0,
    minClaimGapMs: Number.isFinite(minClaimGapMs) ? minClaimGapMs : 0,
    cpuMsPerItem: (cpu.server * 1000) / Math.max(1, sent),
    dbCpuMsPerItem: (cpu.db * 1000) / Math.max(1, sent),
    timedOut,
    unknownRoutes: [...new Set(unknownRoutes)],
  };
}

/** The part's tables and verdicts, as run.ts prints them. */
export function policyReport(rows: { database: string; p: PolicyResults }[], o: { connections: number; seconds: number; rounds: number }): string[] {
  const out: string[] = [];
  const pct = (x: number) => `${(x * 100).toFixed(0)}%`;
  out.push(
    `\nSend policy: accepted POST /v1/messages req/s (${o.connections} connections, ${o.seconds}s, median of ${o.rounds} interleaved rounds) on the default line, on a line whose policy makes the claim-time step run (contact_first false, budgets never reached, quiet hours not active) and with send_at a day ahead (targets: within 5%); messages/s from the load's start until the runner sent them; CPU ms per message over that time, server + its PostgreSQL backends`,
  );
  out.push(
    "database   default req/s  policy req/s  policy/default  send_at req/s  send_at/default  msgs/s sent default/policy  CPU ms/msg default  policy  send_at  errors  unsent",
  );
  const cpuOf = (r: AcceptRun) => `${r.cpuMsWithDelivery.toFixed(2)}+${r.dbCpuMs.toFixed(2)}`;
  for (const { database, p } of rows) {
    const mid = (f: (r: PolicyRound) => number) => median(p.rounds.map(f));
    const errors = p.rounds.reduce((s, r) => s + r.plain.errors + r.policy.errors + r.scheduled.errors, 0);
    // CPU of the round whose figure is the median, per kind.
    const at = (k: keyof PolicyRound) => [...p.rounds].sort((a, b) => a[k].cpuMsWithDelivery + a[k].dbCpuMs - (b[k].cpuMsWithDelivery + b[k].dbCpuMs))[Math.floor(p.rounds.length / 2)]![k];
    out.push(
      `${database.padEnd(10)} ${p.plainRps.toFixed(0).padStart(13)} ${p.policyRps.toFixed(0).padStart(13)} ${pct(p.policyRatio).padStart(15)} ${p.scheduledRps.toFixed(0).padStart(14)} ${pct(p.scheduledRatio).padStart(16)} ${`${mid((r) => r.plain.throughput).toFixed(0)}/${mid((r) => r.policy.throughput).toFixed(0)}`.padStart(26)} ${cpuOf(at("plain")).padStart(19)} ${cpuOf(at("policy")).padStart(7)} ${cpuOf(at("scheduled")).padStart(8)} ${String(errors).padStart(7)} ${String(p.unsent).padStart(7)}`,
    );
    const perRound = p.rounds.map((r) => `${r.plain.rps.toFixed(0)}/${r.policy.rps.toFixed(0)}/${r.scheduled.rps.toFixed(0)}`).join(", ");
    out.push(`${"".padEnd(10)} rounds (default/policy/send_at req/s): ${perRound}`);
  }
  out.push(`\nHeld items and idle CPU (ms of CPU per second over ${rows[0]?.p.idleSeconds ?? 0}s, the server + its PostgreSQL backends; target: unchanged)`);
  out.push("database     held  filled by SQL in s  idle, nothing held  idle, held");
  for (const { database, p } of rows) {
    out.push(
      `${database.padEnd(10)} ${String(p.held).padStart(6)} ${p.fillSeconds.toFixed(1).padStart(19)} ${`${p.idleBefore.toFixed(1)}+${p.idleDbBefore.toFixed(1)}`.padStart(19)} ${`${p.idleAfter.toFixed(1)}+${p.idleDbAfter.toFixed(1)}`.padStart(11)}`,
    );
  }
  out.push(`\nGET /v1/capacity?from=<line>: p50/p99 at 1 connection, req/s at 1 and at ${o.connections} connections (target: p50 < 5 ms); GET /v1/lines (read cache) for reference`);
  out.push(`database   line             held  p50 ms  p99 ms  req/s (1)  req/s (${o.connections})  errors`);
  for (const { database, p } of rows) {
    for (const c of p.capacity) {
      out.push(
        `${database.padEnd(10)} ${c.what.padEnd(14)} ${String(c.held).padStart(7)} ${c.one.p50.toFixed(2).padStart(7)} ${c.one.p99.toFixed(2).padStart(7)} ${c.one.rps.toFixed(0).padStart(10)} ${c.many.rps.toFixed(0).padStart(11)} ${String(c.one.errors + c.many.errors).padStart(7)}`,
      );
    }
  }
  const bursts = rows.filter((r) => r.p.burst);
  if (bursts.length) {
    const b0 = bursts[0]!.p.burst!;
    out.push(
      `\nDue burst: ${b0.lines} BlueBubbles lines (stubs on loopback) x ${b0.perLine} held items, all due at the same instant T, each line paced at rate_per_second ${b0.rate}, with the held items above still held (target: each line at its pace, 0 lost, 0 duplicated, none early)`,
    );
    out.push(
      "database   items  first send after T ms  early (stub/db)   sent  failed  waiting  lost  dup (db/stub)  line rate/s min/median/max  gap ms min/median (claims min)  last send after T s  CPU ms/item",
    );
    for (const { database, p } of bursts) {
      const b = p.burst!;
      if (b.timedOut) out.push(`${database.padEnd(10)} (the part's time bound ended the wait before every item was sent: 'waiting' were not sent yet)`);
      const rates = `${b.lineRates[0]!.toFixed(1)}/${median(b.lineRates).toFixed(1)}/${b.lineRates[b.lineRates.length - 1]!.toFixed(1)}`;
      out.push(
        `${database.padEnd(10)} ${String(b.lines * b.perLine).padStart(5)} ${(b.firstAfterMs === null ? "-" : b.firstAfterMs.toFixed(0)).padStart(22)} ${`${b.earlyAtStub}/${b.earlyInDb}`.padStart(16)} ${String(b.sent).padStart(6)} ${String(b.failed).padStart(7)} ${String(b.waiting).padStart(8)} ${String(b.lost).padStart(5)} ${`${b.duplicatedMessages}/${b.duplicatedAtStub}`.padStart(14)} ${rates.padStart(28)} ${`${b.minGapMs.toFixed(0)}/${b.medianGapMs.toFixed(0)} (${b.minClaimGapMs.toFixed(0)})`.padStart(31)} ${b.seconds.toFixed(1).padStart(20)} ${`${b.cpuMsPerItem.toFixed(2)}+${b.dbCpuMsPerItem.toFixed(2)}`.padStart(12)}`,
      );
      if (b.unknownRoutes.length) out.push(`${"".padEnd(10)} requests the stubs do not answer: ${b.unknownRoutes.join(", ")}`);
    }
  }
  for (const { database, p } of rows) {
    const idle0 = p.idleBefore + p.idleDbBefore;
    const idle1 = p.idleAfter + p.idleDbAfter;
    const verdicts = [
      `policy check ${pct(p.policyRatio)} of the default policy's req/s (target >= 95%) -> ${p.policyRatio >= 0.95 ? "met" : "NOT met"}`,
      `send_at ${pct(p.scheduledRatio)} (target: same time per item, >= 95%) -> ${p.scheduledRatio >= 0.95 ? "met" : "NOT met"}`,
      `idle CPU ${idle0.toFixed(1)} -> ${idle1.toFixed(1)} ms/s with ${p.held} held (target: unchanged) -> ${idle1 <= idle0 * 1.2 + 2 ? "met" : "NOT met"}`,
    ];
    const caps = p.capacity.filter((c) => c.what !== "GET /v1/lines");
    const cap = caps.map((c) => `${c.what} p50 ${c.one.p50.toFixed(2)} ms`).join(", ");
    verdicts.push(`capacity ${cap} (target < 5 ms) -> ${caps.every((c) => c.one.p50 < 5) ? "met" : "NOT met"}`);
    const b = p.burst;
    if (b) {
      const atPace = b.lineRates[0]! >= b.rate * 0.95;
      const ok = b.lost === 0 && b.waiting === 0 && b.failed === 0 && b.duplicatedMessages + b.duplicatedAtStub === 0 && b.earlyAtStub + b.earlyInDb === 0;
      verdicts.push(
        `burst: slowest line ${b.lineRates[0]!.toFixed(1)}/s of ${b.rate}/s -> ${atPace ? "at pace" : "NOT at pace"}; lost ${b.lost}, not sent in time ${b.waiting + b.failed}, duplicated ${b.duplicatedMessages + b.duplicatedAtStub}, early ${b.earlyAtStub + b.earlyInDb} -> ${ok ? "ok" : "NOT ok"}`,
      );
    }
    out.push(`\n${database}: ${verdicts.join("; ")}`);
  }
  return out;
}

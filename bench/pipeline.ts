// The inbound part of npm run bench: the event pipeline measured black-box against the running
// `npm start` (bench/run.ts starts it): provider webhooks in (wrk, bench/inbound.ts), messages
// stored, message.received webhooks out to a receiver in its own process (bench/receiver.ts).
// Scenarios on one BlueBubbles line: 1 webhook; 5 webhooks; and, after 100,000 scheduled sends
// were made held on the same database (bench/held.ts), 1 webhook again. Every figure comes from
// outside the server: the database's rows, what wrk counted, what the receiver recorded.
//
// Times: a message is "received by the server" at its row's syncedAt (now() of the
// transaction that stores it, on the database's clock, this machine's); a delivery is "sent" at
// its X-Webhook-Timestamp (the start of the attempt, signed by the server) and "arrives" when
// the receiver reads it. Lag is sent - syncedAt; arrival - syncedAt is reported beside it.
// Rates are over the load window (wrk's own duration, ending when wrk stopped): rows whose
// syncedAt falls in it, first deliveries that arrived in it.
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { tableStats } from "./generator";
import { type HeldResults, IDLE_SECONDS, measureHeld } from "./held";
import { connectLine, runWrk } from "./inbound";
import { cpuSeconds, type ServerTarget } from "./load";
import { processCpu, serverBackends } from "./policy";
import { type PortRecord, startReceiver } from "./receiver";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** The webhooks of the many-webhooks scenario. */
const MANY = 5;

export interface PipelineTarget extends ServerTarget {
  database: "pglite" | "postgres";
  /** Scheduled sends to hold before the last scenario (0: no held scenario). */
  held: number;
}

export interface ScenarioResults {
  label: string;
  webhooks: number;
  /** wrk's figures: the load window, requests, answers. */
  seconds: number;
  requests: number;
  requestsPerSecond: number;
  p50: number;
  p99: number;
  notOk: Record<string, number>;
  outcomes: Record<string, number>;
  sent: number;
  repeats: number;
  stored: number;
  storedPerSecond: number;
  /** Events delivered to each webhook in the window (the slowest webhook), and deliveries to all of them. */
  deliveredPerSecond: number;
  deliveriesPerSecond: number;
  /** syncedAt to the delivery's send time (X-Webhook-Timestamp), and to its arrival, in ms. */
  lagP50: number;
  lagP99: number;
  arrivalP50: number;
  arrivalP99: number;
  /** Deliveries sent more than 1 s after their row, and when (s into the load) the first and last of those rows were stored: one stall or spread. */
  slow: { count: number; from: number; to: number };
  /** From wrk stopping to the last first delivery arriving; false when the wait bound ended it. */
  backlogSeconds: number;
  drained: boolean;
  /** Deliveries of earlier scenarios still waiting when this one started (the wait for a quiet server ran out). */
  waitingAtStart: number;
  lostNotStored: number;
  lostNotDelivered: number;
  duplicatedStored: number;
  /** Beyond one per message and webhook: at the receiver, and rows in WebhookDelivery. */
  duplicatedReceived: number;
  duplicatedRows: number;
  /** WebhookDelivery rows of the scenario attempted more than once, and not succeeded when it ended. */
  retried: number;
  unsettled: number;
  badSignatures: number;
  /** Cores busy during the load window: the server's process tree, and (PostgreSQL) its backends. */
  serverCores: number;
  dbCores: number | null;
  /** Server CPU ms per stored message, from the load's start until the backlog was empty. */
  cpuMsPerEvent: number;
  /** PostgreSQL: the schema's table statistics per request. */
  perRequest: { idxScans: number; inserted: number; updated: number } | null;
}

export interface InboundResults {
  /** PostgreSQL with autovacuum off: the bench stood in for it. */
  vacuumedByBench: boolean;
  scenarios: ScenarioResults[];
  held: HeldResults | null;
}

function percentile(sorted: Float64Array, p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]! : NaN;
}

export async function measureInbound(t: PipelineTarget): Promise<InboundResults> {
  const say = (what: string) => console.error(`[inbound] ${t.database}: ${what}`);
  const line = await connectLine(t);
  const receiver = await startReceiver(MANY);
  // After the operator CLI has run: PGlite's socket serves one client at a time.
  const client = new pg.Client({ ...t.db, query_timeout: 300_000 });
  const dir = mkdtempSync(path.join(tmpdir(), "relay-pipeline-"));
  const headers = { ...t.auth, "content-type": "application/json" };
  let stopStandIn = async () => {};
  try {
    await client.connect();
    const secrets: string[] = [];
    const hooks: string[] = [];
    const subscribe = async (i: number) => {
      const res = await fetch(`${t.base}/v1/webhooks`, {
        method: "POST",
        headers,
        body: JSON.stringify({ from: line.handle, url: receiver.urls[i], events: ["message.received"] }),
      });
      const created = (await res.json()) as { id?: string; secret?: string };
      if (!created.id || !created.secret) throw new Error(`webhook not created: ${res.status} ${JSON.stringify(created)}`);
      hooks[i] = created.id;
      secrets[i] = created.secret;
      receiver.setSecrets(secrets);
    };
    const unsubscribe = async (i: number) => {
      const res = await fetch(`${t.base}/v1/webhooks`, { method: "DELETE", headers, body: JSON.stringify({ id: hooks[i] }) });
      if (!res.ok) throw new Error(`webhook ${hooks[i]} not deleted: ${res.status} ${await res.text()}`);
    };
    const dbPort = t.database === "postgres" ? Number(new URL(String(t.db.connectionString)).port || 5432) : 0;
    const mark = async () => {
      const backends = new Map<number, number>();
      if (dbPort) for (const pid of await serverBackends(client, t.serverPid, dbPort)) backends.set(pid, processCpu(pid));
      return { at: performance.now(), server: cpuSeconds(t.serverPid), backends };
    };
    const since = async (before: Awaited<ReturnType<typeof mark>>) => {
      const after = await mark();
      let db = 0;
      for (const [pid, cpu] of after.backends) db += cpu - (before.backends.get(pid) ?? 0);
      return { seconds: (after.at - before.at) / 1000, server: after.server - before.server, db };
    };
    /**
     * Until no delivery is waiting or in flight, at most 5 minutes: each scenario should start on a
     * quiet server. Resolves with the deliveries still waiting (0 when it is quiet), which the
     * report shows: a scenario that started on a backlog measured that too.
     */
    const quiet = async (): Promise<number> => {
      let waiting = 0;
      for (const deadline = Date.now() + 300_000; Date.now() < deadline; await sleep(250)) {
        waiting = (await client.query(`SELECT count(*)::int AS n FROM "WebhookDelivery" WHERE status IN ('pending', 'delivering')`)).rows[0].n;
        if (waiting === 0) return 0;
      }
      say(`${waiting} deliveries still waiting after 5 minutes`);
      return waiting;
    };
    const storedRows = async (prefix: string) =>
      (
        await client.query(
          `SELECT guid, (extract(epoch FROM "syncedAt") * 1000)::float8 AS at FROM "Message" WHERE "lineId" = $1 AND left(guid, 24) = $2`,
          [line.id, prefix],
        )
      ).rows as { guid: string; at: number }[];

    // The PostgreSQL of a development machine may run with autovacuum off (this one's does, for
    // the tests). The delivery queue's table then keeps the statistics of when it was small and
    // every dead row: the claim's plan reads the whole backlog, and the figures are of a database
    // production never runs. So the bench stands in for autovacuum with its own settings: every
    // autovacuum_naptime, each of the schema's tables past its analyze or vacuum threshold.
    const autovacuumOff = t.schema !== null && (await client.query(`SHOW autovacuum`)).rows[0].autovacuum === "off";
    let standIn: NodeJS.Timeout | undefined;
    if (autovacuumOff) {
      say("autovacuum is off on this PostgreSQL: the bench stands in for it (its naptime and thresholds, the bench schema only)");
      const settings = Object.fromEntries(
        (await client.query(`SELECT name, setting FROM pg_settings WHERE name LIKE 'autovacuum_%'`)).rows.map((r: { name: string; setting: string }) => [r.name, Number(r.setting)]),
      );
      // Its own connection: the bench's client waits on long queries of its own.
      const maintenance = new pg.Client(t.db);
      await maintenance.connect();
      let running = false;
      const pass = async () => {
        if (running) return;
        running = true;
        try {
          const { rows } = await maintenance.query(
            `SELECT format('%I.%I', s.schemaname, s.relname) AS name,
                    s.n_dead_tup > $2 + $3 * greatest(c.reltuples, 0) AS vacuum,
                    s.n_mod_since_analyze > $4 + $5 * greatest(c.reltuples, 0) AS analyze
             FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid WHERE s.schemaname = $1`,
            [t.schema, settings.autovacuum_vacuum_threshold, settings.autovacuum_vacuum_scale_factor, settings.autovacuum_analyze_threshold, settings.autovacuum_analyze_scale_factor],
          );
          for (const r of rows as { name: string; vacuum: boolean; analyze: boolean }[]) {
            if (r.vacuum) await maintenance.query(`VACUUM ANALYZE ${r.name}`);
            else if (r.analyze) await maintenance.query(`ANALYZE ${r.name}`);
          }
        } catch (err) {
          say(`autovacuum stand-in: ${(err as Error).message}`);
        } finally {
          running = false;
        }
      };
      standIn = setInterval(() => void pass(), (settings.autovacuum_naptime ?? 60) * 1000);
      stopStandIn = async () => {
        clearInterval(standIn);
        while (running) await sleep(100);
        await maintenance.end();
      };
    }
    const scenario = async (label: string, webhooks: number, warmUp = false): Promise<ScenarioResults> => {
      const waitingAtStart = await quiet();
      const prefix = randomUUID().toUpperCase().slice(0, 24);
      receiver.reset(prefix);
      say(`${label}: ${warmUp ? 5 : t.seconds} s of load`);
      const cpuBefore = await mark();
      const statsBefore = t.schema ? await tableStats(client, t.schema) : null;
      const wrk = await runWrk(line.url, prefix, warmUp ? 5 : t.seconds, t.connections);
      const load = await since(cpuBefore);
      const loadEnd = wrk.stoppedAt;
      const loadStart = loadEnd - wrk.seconds * 1000;

      // Until every message sent was delivered to every webhook, or, when some never will be
      // (lost), the server holds no delivery of these webhooks any more (a retry waiting out its
      // backoff still counts as held); at most 180 s.
      let drained = false;
      let last = { distinct: -1, at: Date.now() };
      for (const deadline = Date.now() + 180_000; Date.now() < deadline; await sleep(100)) {
        const status = await receiver.status();
        const least = Math.min(...status.distinct.slice(0, webhooks));
        if (least >= wrk.sent.length) {
          drained = true;
          break;
        }
        if (least !== last.distinct) last = { distinct: least, at: Date.now() };
        else if (Date.now() - last.at > 2_000) {
          last.at = Date.now();
          const { rows } = await client.query(`SELECT count(*)::int AS n FROM "WebhookDelivery" WHERE "webhookId" = ANY($1::text[]) AND status IN ('pending', 'delivering')`, [
            hooks.slice(0, webhooks),
          ]);
          if (rows[0].n === 0) {
            drained = least >= new Set((await storedRows(prefix)).map((r) => r.guid)).size;
            break;
          }
        }
      }
      const total = await since(cpuBefore);
      // Late redeliveries (duplicates) would arrive now.
      await sleep(1_000);
      const statsAfter = t.schema ? await tableStats(client, t.schema) : null;
      const ports: PortRecord[] = (await receiver.report(path.join(dir, `${prefix}.json`))).slice(0, webhooks);

      const rows = await storedRows(prefix);
      const storedAt = new Map<string, number>();
      for (const r of rows) if (!storedAt.has(r.guid)) storedAt.set(r.guid, r.at);
      const inWindow = (at: number) => at >= loadStart && at <= loadEnd;
      const storedInWindow = [...storedAt.values()].filter(inWindow).length;
      const lags: number[] = [];
      const arrivals: number[] = [];
      let lastArrival = 0;
      const slow = { count: 0, from: Infinity, to: -Infinity };
      let lostNotDelivered = 0;
      const deliveredInWindow = ports.map((p) => {
        const got = new Set(p.guids);
        for (const guid of storedAt.keys()) if (!got.has(guid)) lostNotDelivered++;
        let n = 0;
        p.guids.forEach((guid, i) => {
          const stored = storedAt.get(guid);
          if (stored !== undefined) {
            lags.push(p.sent[i]! - stored);
            if (p.sent[i]! - stored > 1_000) {
              slow.count++;
              slow.from = Math.min(slow.from, (stored - loadStart) / 1000);
              slow.to = Math.max(slow.to, (stored - loadStart) / 1000);
            }
            arrivals.push(p.arrived[i]! - stored);
          }
          lastArrival = Math.max(lastArrival, p.arrived[i]!);
          if (inWindow(p.arrived[i]!)) n++;
        });
        return n;
      });
      const lagSorted = Float64Array.from(lags).sort();
      const arrivalSorted = Float64Array.from(arrivals).sort();
      const dbDeliveries = (
        await client.query(
          `SELECT "webhookId", count(*)::int AS n, count(DISTINCT payload->>'guid')::int AS d,
                  count(*) FILTER (WHERE attempts > 1)::int AS retried, count(*) FILTER (WHERE status <> 'succeeded')::int AS unsettled FROM "WebhookDelivery"
           WHERE "webhookId" = ANY($1::text[]) AND event = 'message.received' AND left(payload->>'guid', 24) = $2 GROUP BY "webhookId"`,
          [hooks.slice(0, webhooks), prefix],
        )
      ).rows as { n: number; d: number; retried: number; unsettled: number }[];
      const sentSet = new Set(wrk.sent);
      const strangers = [...storedAt.keys()].filter((g) => !sentSet.has(g)).length;
      if (strangers) say(`${strangers} messages stored that wrk did not send`);
      const requests = wrk.requests;
      return {
        label,
        webhooks,
        seconds: wrk.seconds,
        requests,
        requestsPerSecond: requests / wrk.seconds,
        p50: wrk.p50,
        p99: wrk.p99,
        notOk: Object.fromEntries(Object.entries(wrk.statuses).filter(([s]) => s !== "200")),
        outcomes: wrk.outcomes,
        sent: wrk.sent.length,
        repeats: wrk.repeats,
        stored: storedAt.size,
        storedPerSecond: storedInWindow / wrk.seconds,
        deliveredPerSecond: Math.min(...deliveredInWindow) / wrk.seconds,
        deliveriesPerSecond: deliveredInWindow.reduce((a, b) => a + b, 0) / wrk.seconds,
        lagP50: percentile(lagSorted, 50),
        lagP99: percentile(lagSorted, 99),
        arrivalP50: percentile(arrivalSorted, 50),
        arrivalP99: percentile(arrivalSorted, 99),
        slow,
        backlogSeconds: Math.max(0, lastArrival - loadEnd) / 1000,
        drained,
        waitingAtStart,
        lostNotStored: wrk.sent.filter((g) => !storedAt.has(g)).length,
        lostNotDelivered,
        duplicatedStored: rows.length - storedAt.size,
        duplicatedReceived: ports.reduce((n, p) => n + p.counts.reduce((m, c) => m + c - 1, 0), 0),
        duplicatedRows: dbDeliveries.reduce((n, r) => n + r.n - r.d, 0),
        retried: dbDeliveries.reduce((n, r) => n + r.retried, 0),
        unsettled: dbDeliveries.reduce((n, r) => n + r.unsettled, 0),
        badSignatures: ports.reduce((n, p) => n + p.badSignatures, 0),
        serverCores: load.server / load.seconds,
        dbCores: dbPort ? load.db / load.seconds : null,
        cpuMsPerEvent: (total.server * 1000) / Math.max(1, storedAt.size),
        perRequest:
          statsBefore && statsAfter
            ? {
                idxScans: (statsAfter.idx - statsBefore.idx) / requests,
                inserted: (statsAfter.ins - statsBefore.ins) / requests,
                updated: (statsAfter.upd - statsBefore.upd) / requests,
              }
            : null,
      };
    };

    await subscribe(0);
    // Warm-up (JIT, caches, every sender's chat: the held sends need it), not reported.
    await scenario("warm-up", 1, true);
    const scenarios = [await scenario("1 webhook", 1)];
    for (let i = 1; i < MANY; i++) await subscribe(i);
    scenarios.push(await scenario(`${MANY} webhooks`, MANY));
    for (let i = 1; i < MANY; i++) await unsubscribe(i);
    let held: HeldResults | null = null;
    if (t.held > 0) {
      const waiting = await quiet();
      if (waiting) say(`the idle CPU and the held items are measured with ${waiting} deliveries still waiting`);
      const idleCpu = async () => {
        await sleep(2_000);
        const before = await mark();
        await sleep(IDLE_SECONDS * 1000);
        const used = await since(before);
        return { server: (used.server / used.seconds) * 100, db: dbPort ? (used.db / used.seconds) * 100 : null };
      };
      held = await measureHeld({ ...t, client, idleCpu, line: line.handle, lineId: line.id, say });
      scenarios.push(await scenario(`1 webhook, ${t.held.toLocaleString("en-US")} held`, 1));
    }
    if (line.unknown().length) say(`the BlueBubbles stub got requests it does not answer: ${line.unknown().join(", ")}`);
    return { vacuumedByBench: autovacuumOff, scenarios, held };
  } finally {
    await stopStandIn();
    receiver.stop();
    await client.end().catch(() => undefined);
    await line.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

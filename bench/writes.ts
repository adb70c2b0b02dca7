// Write-side measurements for npm run bench (bench/run.ts calls these against a running
// `next start`): accepted POST /v1/messages per second, outbox drain throughput with lost and
// duplicated items counted, and idle end-to-end latency from POST to status `sent`.
import type { Baseline } from "./baseline";
import { type Measured, measureWithCpu, storeEnvelope } from "./load";
import pg from "pg";

export interface WriteResults {
  /** The separate baseline app's route (answering the same envelope) in the same round as the reported accept rate: the target's reference. */
  baseline: Measured;
  /** The in-app echo route (answering the same envelope) in that round. */
  trivial: Measured;
  accept: Measured;
  /** Server CPU ms per request at the fixed rate (the accepted items are delivered meanwhile, as in production). */
  trivialCpuAtRate: number;
  acceptCpuAtRate: number;
  drained: number;
  drainSeconds: number;
  drainPerSecond: number;
  lost: number;
  duplicated: number;
  latencyP50: number;
  latencyP99: number;
}

interface Target {
  base: string;
  auth: Record<string, string>;
  line: string;
  contact: string;
  /** Direct database access (the server's PGlite socket, or PostgreSQL with the bench schema). */
  db: pg.ClientConfig;
  seconds: number;
  /** Interleaved accept/trivial rounds; the median ratio is reported. */
  rounds: number;
  drainCount: number;
  connections: number;
  fixedRate: number;
  serverPid: number;
  baseline: Baseline;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits for a final status; returns the item's completed_at (ms since the epoch). */
async function waitSent(base: string, auth: Record<string, string>, id: string): Promise<number> {
  for (;;) {
    const item = await (await fetch(`${base}/v1/outbox?id=${id}`, { headers: auth })).json();
    if (item.status === "sent" || item.status === "failed") return item.completed_at;
    // Poll gently: a tight poll loop would load the server and slow the delivery it measures.
    await sleep(10);
  }
}

export async function measureWrites(t: Target): Promise<WriteResults> {
  const body = JSON.stringify({ from: t.line, to: t.contact, text: "bench" });
  const headers = { ...t.auth, "content-type": "application/json" };

  const client = new pg.Client(t.db);
  await client.connect();
  const pendingLeft = async () =>
    Number((await client.query(`SELECT count(*)::int AS n FROM "OutboxItem" WHERE status IN ('pending','claimed')`)).rows[0].n);
  /** Waits (at most 5 minutes) until the runner has sent everything accepted so far. */
  const drained = async () => {
    for (let i = 0; i < 600 && (await pendingLeft()) > 0; i++) await sleep(500);
  };

  // 1. Idle latency first, before anything is queued.
  const latencies: number[] = [];
  for (let i = 0; i < 30; i++) {
    // From the moment the client sends the POST to the server's completed_at (the commit of
    // status `sent`), on one machine's clock.
    const started = Date.now();
    const res = await fetch(`${t.base}/v1/messages`, { method: "POST", headers, body });
    latencies.push((await waitSent(t.base, t.auth, (await res.json()).id)) - started);
    await sleep(50);
  }
  latencies.sort((a, b) => a - b);

  // 2. Accepted writes per second (the runner drains meanwhile, as in production), in rounds
  //    interleaved with the trivial routes answering the same envelope (the baseline app's and
  //    the in-app echo); the round with the median ratio to the baseline app is reported.
  const echoes = [`${t.base}/api/bench/echo`, `${t.baseline.base}/echo`];
  await storeEnvelope(echoes, "outbox", await fetch(`${t.base}/v1/messages`, { method: "POST", headers, body }));
  const run = (url: string, pid = t.serverPid) =>
    measureWithCpu(pid, { url, method: "POST", headers, body, connections: t.connections, seconds: t.seconds });
  const rounds: { accept: Measured; trivial: Measured; baseline: Measured }[] = [];
  for (let round = 0; round < t.rounds; round++) {
    await drained(); // the previous round's backlog must not slow this round's trivial routes
    const baseline = await run(`${t.baseline.base}/echo?name=outbox`, t.baseline.pid);
    const trivial = await run(`${t.base}/api/bench/echo?name=outbox`);
    const accept = await run(`${t.base}/v1/messages`);
    rounds.push({ accept, trivial, baseline });
  }
  rounds.sort((a, b) => a.accept.rps / a.baseline.rps - b.accept.rps / b.baseline.rps);
  const { accept, trivial, baseline } = rounds[Math.floor(rounds.length / 2)]!;
  await drained();
  const atRate = async (url: string) =>
    (await measureWithCpu(t.serverPid, { url, method: "POST", headers, body, connections: 8, seconds: t.seconds, rate: t.fixedRate })).cpuMs;
  const trivialCpuAtRate = await atRate(`${t.base}/api/bench/echo?name=outbox`);
  const acceptCpuAtRate = await atRate(`${t.base}/v1/messages`);

  // 3. Drain: once the accept runs have drained, queue drainCount items at once.
  await drained();
  const { rows } = await client.query(
    `SELECT l.id AS line_id, l."accountId" AS account_id, c.id AS chat_id FROM "Line" l JOIN "Chat" c ON c."lineId" = l.id
     WHERE l.handle = $1 AND c.identifier = $2`,
    [t.line, t.contact],
  );
  const { line_id, account_id, chat_id } = rows[0];
  const payload = { chat_id, to: t.contact, is_group: false, text: "drain", attachments: [], reply_to_guid: null };
  await client.query(
    `INSERT INTO "OutboxItem" (id, "accountId", "lineId", kind, payload, status, "requestId")
     SELECT 'obx_' || lpad(g::text, 26, '0'), $1, $2, 'message', $3::jsonb, 'pending', 'req_bench'
     FROM generate_series(1, $4::int) g`,
    [account_id, line_id, JSON.stringify(payload), t.drainCount],
  );
  const started = performance.now();
  let done = 0;
  const deadline = Date.now() + 300_000;
  while (Date.now() < deadline) {
    done = Number(
      (await client.query(`SELECT count(*)::int AS n FROM "OutboxItem" WHERE id LIKE 'obx_000%' AND status IN ('sent','failed')`)).rows[0].n,
    );
    if (done >= t.drainCount) break;
    await sleep(100);
  }
  const drainSeconds = (performance.now() - started) / 1000;
  const dup = await client.query(
    `SELECT (count(*) - count(DISTINCT "outboxId"))::int AS n FROM "Message" WHERE "outboxId" LIKE 'obx_000%'`,
  );
  const sentRows = await client.query(`SELECT count(DISTINCT "outboxId")::int AS n FROM "Message" WHERE "outboxId" LIKE 'obx_000%'`);
  await client.end();
  return {
    baseline,
    trivial,
    accept,
    trivialCpuAtRate,
    acceptCpuAtRate,
    drained: done,
    drainSeconds,
    drainPerSecond: done / drainSeconds,
    lost: t.drainCount - Number(sentRows.rows[0].n),
    duplicated: Number(dup.rows[0].n),
    latencyP50: latencies[Math.floor(latencies.length / 2)]!,
    latencyP99: latencies[latencies.length - 1]!,
  };
}

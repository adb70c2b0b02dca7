// Webhook throughput for npm run bench (bench/run.ts calls this against a running `next start`):
// signed deliveries per second from the embedded sender to a local receiver that answers 200
// at once, with every signature verified and lost and duplicated deliveries counted.
import http from "node:http";
import type { AddressInfo } from "node:net";
import pg from "pg";
import { verifyWebhook } from "../server/webhooks/signing";

export interface WebhookResults {
  count: number;
  delivered: number;
  seconds: number;
  perSecond: number;
  lost: number;
  duplicated: number;
  badSignatures: number;
  /** Deliveries the database shows as succeeded (must equal count). */
  succeeded: number;
}

interface Target {
  base: string;
  auth: Record<string, string>;
  line: string;
  /** Direct database access (the server's PGlite socket, or PostgreSQL with the bench schema). */
  db: pg.ClientConfig;
  count: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const BENCH_PREFIX = "dlv_bench";

export async function measureWebhooks(t: Target): Promise<WebhookResults> {
  let secret = "";
  const seen = new Map<string, number>();
  let badSignatures = 0;
  let lastBenchAt = 0;
  const receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const rawBody = Buffer.concat(chunks).toString("utf8");
      try {
        const event = verifyWebhook(rawBody, req.headers as Record<string, string>, secret);
        const id = event.delivery_id;
        seen.set(id, (seen.get(id) ?? 0) + 1);
        if (id.startsWith(BENCH_PREFIX)) lastBenchAt = performance.now();
      } catch {
        badSignatures++;
      }
      res.writeHead(200, { "content-type": "text/plain" }).end("ok");
    });
  });
  receiver.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/bench-hook`;
  const headers = { ...t.auth, "content-type": "application/json" };
  const client = new pg.Client(t.db);
  await client.connect();
  try {
    const created = await (
      await fetch(`${t.base}/v1/webhooks`, { method: "POST", headers, body: JSON.stringify({ from: t.line, url, events: ["message.received"] }) })
    ).json();
    if (!created.secret) throw new Error(`webhook not created: ${JSON.stringify(created)}`);
    secret = created.secret;

    // One real event first: its payload is the template, and it warms the path.
    const inbound = (text: string) =>
      fetch(`${t.base}/api/simulator/messages`, { method: "POST", headers, body: JSON.stringify({ line: t.line, from: "+15551230000", text }) });
    await inbound("webhook bench template");
    for (let i = 0; i < 100 && seen.size === 0; i++) await sleep(100);
    if (seen.size === 0) throw new Error("the template event was never delivered");
    const { rows } = await client.query(`SELECT payload FROM "WebhookDelivery" WHERE "webhookId" = $1 LIMIT 1`, [created.id]);

    // The backlog: `count` deliveries of that event, due now, written at once.
    await client.query(
      `INSERT INTO "WebhookDelivery" (id, "webhookId", event, payload, status, "nextAttemptAt")
       SELECT '${BENCH_PREFIX}' || lpad(g::text, 20, '0'), $1, 'message.received', $2::jsonb, 'pending', now()
       FROM generate_series(1, $3::int) g`,
      [created.id, JSON.stringify(rows[0].payload), t.count],
    );
    // A new event wakes the sender at once (otherwise it would notice within its 1 s idle poll).
    const started = performance.now();
    await inbound("webhook bench go");
    const deadline = Date.now() + 300_000;
    const benchSeen = () => [...seen.keys()].filter((id) => id.startsWith(BENCH_PREFIX)).length;
    while (benchSeen() < t.count && Date.now() < deadline) await sleep(20);
    const seconds = (lastBenchAt - started) / 1000;
    await sleep(1_000); // anything sent twice would arrive now
    const benchIds = [...seen].filter(([id]) => id.startsWith(BENCH_PREFIX));
    const delivered = benchIds.length;
    const duplicated = benchIds.reduce((n, [, times]) => n + times - 1, 0);
    const succeeded = Number(
      (await client.query(`SELECT count(*)::int AS n FROM "WebhookDelivery" WHERE id LIKE '${BENCH_PREFIX}%' AND status = 'succeeded'`)).rows[0].n,
    );
    return {
      count: t.count,
      delivered,
      seconds,
      perSecond: delivered / seconds,
      lost: t.count - delivered,
      duplicated,
      badSignatures,
      succeeded,
    };
  } finally {
    await client.end();
    receiver.closeAllConnections();
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
  }
}

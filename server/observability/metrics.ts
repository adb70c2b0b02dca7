import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import { sql } from "../db";
import { lineStatusCounts } from "./line-counts";
import { processSingleton } from "../kernel/singleton";

// Queue gauges are read from the database at scrape time, the same on every instance: max() them, sum() the counters.

const DB_GAUGE_TTL_MS = 5_000;

interface DbFigures {
  outbox: { status: string; n: number }[];
  oldestPendingSeconds: number;
  webhooks: { status: string; n: number }[];
  lines: { provider: string; status: string; n: number }[];
}

function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 20 });
  // A database that does not answer leaves its gauges out rather than failing the scrape.
  let figures: { at: number; value: Promise<DbFigures | null> } | null = null;
  const dbFigures = (): Promise<DbFigures | null> => {
    if (!figures || Date.now() - figures.at > DB_GAUGE_TTL_MS) {
      figures = { at: Date.now(), value: readDbFigures().catch(() => null) };
    }
    return figures.value;
  };
  const registers = [registry];
  const m = {
    registry,
    forgetDbFigures: () => void (figures = null),
    httpRequests: new Counter({
      name: "relay_http_requests_total",
      help: "HTTP requests answered, by route template, method and status.",
      labelNames: ["route", "method", "status"] as const,
      registers,
    }),
    httpDuration: new Histogram({
      name: "relay_http_request_duration_seconds",
      help: "Time from request to the end of the response, by route template, method and status (streams count until they end).",
      labelNames: ["route", "method", "status"] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    sends: new Counter({
      name: "relay_outbox_sends_total",
      help: "Outbox send attempts by provider and outcome (sent, failed: refused for good, retry: will be tried again, unknown: the provider may have sent it).",
      labelNames: ["provider", "outcome"] as const,
      registers,
    }),
    webhookDeliveries: new Counter({
      name: "relay_webhook_attempts_total",
      help: "Webhook delivery attempts by outcome (succeeded, retry, failed: no attempts left or the receiver answered 410).",
      labelNames: ["outcome"] as const,
      registers,
    }),
    webhookAttemptDuration: new Histogram({
      name: "relay_webhook_attempt_duration_seconds",
      help: "Duration of webhook delivery attempts, by outcome.",
      labelNames: ["outcome"] as const,
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    rateLimited: new Counter({
      name: "relay_rate_limit_rejections_total",
      help: "Requests refused by a limit, by error code (rate_limit_exceeded: hourly key limit or sign-in/sign-up throttle; sandbox_quota_exceeded; too_many_streams).",
      labelNames: ["code"] as const,
      registers,
    }),
  };
  new Gauge({
    name: "relay_database_up",
    help: "1 when the database answered the last read of the queue gauges, else 0.",
    registers,
    async collect() {
      this.set((await dbFigures()) ? 1 : 0);
    },
  });
  const dbGauge = <L extends string>(name: string, help: string, labelNames: readonly L[], series: (f: DbFigures) => [Partial<Record<L, string>>, number][]) =>
    new Gauge({
      name,
      help,
      labelNames,
      registers,
      async collect() {
        this.reset();
        const f = await dbFigures();
        if (f) for (const [labels, value] of series(f)) this.set(labels, value);
      },
    });
  dbGauge("relay_outbox_items", "Outbox items by status: pending (due or retrying), held (waiting for its time: scheduled, quiet hours, a budget), claimed (from the database; the same on every instance).", ["status"], (f) =>
    f.outbox.map((r) => [{ status: r.status }, r.n]),
  );
  dbGauge("relay_outbox_oldest_pending_age_seconds", "Age of the oldest outbox item that is due and still pending (0 when none; from the database).", [], (f) => [
    [{}, f.oldestPendingSeconds],
  ]);
  dbGauge("relay_webhook_deliveries", "Webhook deliveries by status: pending and delivering are the queue (from the database).", ["status"], (f) =>
    f.webhooks.map((r) => [{ status: r.status }, r.n]),
  );
  dbGauge("relay_provider_lines", "Lines by provider and connection status (connected, degraded, disconnected; from the database).", ["provider", "status"], (f) =>
    f.lines.map((r) => [{ provider: r.provider, status: r.status }, r.n]),
  );
  return m;
}

async function readDbFigures(): Promise<DbFigures> {
  const [outbox, oldest, webhooks, lines] = await Promise.all([
    sql<{ status: string; n: number }>(`SELECT status, count(*)::int AS n FROM "OutboxItem" WHERE status IN ('pending', 'held', 'claimed') GROUP BY status`),
    sql<{ s: number | null }>(
      `SELECT extract(epoch FROM (now() - min("availableAt")))::float8 AS s FROM "OutboxItem" WHERE status IN ('pending', 'held') AND "availableAt" <= now()`,
    ),
    sql<{ status: string; n: number }>(`SELECT status, count(*)::int AS n FROM "WebhookDelivery" WHERE status IN ('pending', 'delivering') GROUP BY status`),
    lineStatusCounts(),
  ]);
  // Zero series for the queue states, so an empty queue reads 0 rather than disappearing.
  const withZeros = (rows: { status: string; n: number }[], states: string[]) =>
    states.map((status) => ({ status, n: rows.find((r) => r.status === status)?.n ?? 0 }));
  return {
    outbox: withZeros(outbox, ["pending", "held", "claimed"]),
    oldestPendingSeconds: Math.max(0, oldest[0]?.s ?? 0),
    webhooks: withZeros(webhooks, ["pending", "delivering"]),
    lines,
  };
}

const state = processSingleton("metrics", () => ({ metrics: null as ReturnType<typeof createMetrics> | null }));

export function metrics(): ReturnType<typeof createMetrics> {
  state.metrics ??= createMetrics();
  return state.metrics;
}

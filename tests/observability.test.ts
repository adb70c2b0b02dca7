import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, parseConfig, resetConfig } from "@/server/kernel/config";
import { startRunner, stopRunner } from "@/server/engine/outbox-runner";
import { ApiError } from "@/server/kernel/errors";
import { errorAnswer } from "@/server/transports/http/responses";
import { annotateRequest, requestIdOf } from "@/server/observability/request-context";
import { installHttpHook, openRequests } from "@/server/transports/ops/http-hook";
import { LineBatch, log, logRequest, readableLine, resetLogger } from "@/server/kernel/log";
import { metrics } from "@/server/observability/metrics";
import { routeTemplate, tableOf } from "@/server/transports/ops/routes";
import { startWebhookRunner, stopWebhookRunner } from "@/server/engine/webhook-runner";
import { dispatch, get, inbound, makeAccount, post } from "./helpers";
import { captureLog } from "./log-capture";

// Health, metrics and the request log, as an operator and Prometheus see them.

async function scrape(headers: Record<string, string> = {}) {
  const res = await dispatch(new Request("http://localhost:3000/metrics", { headers }));
  const text = await res.text();
  const json = res.headers.get("content-type")?.includes("json");
  return { status: res.status, headers: res.headers, text, body: json ? JSON.parse(text) : null };
}

/** A metric's value in Prometheus text, by name and labels (0 when the series is absent). */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split("\n")) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-z_:]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = (m[2] ?? "").split(",");
    if (want.every((w) => have.includes(w))) return Number(m[3]);
  }
  return 0;
}

describe("route templates", () => {
  const table = tableOf(
    ["/healthz", "/v1/messages", "/dashboard/chats"],
    [
      { page: "/api/files/[id]", regex: "^/api/files/([^/]+?)(?:/)?$" },
      { page: "/v1/[[...path]]", regex: "^/v1(?:/(.+?))?(?:/)?$" },
    ],
  );

  it("names requests by the app's route, not by their IDs; anything else is one series", () => {
    expect(routeTemplate("/api/files/file_01jz8x9k2m", table)).toBe("/api/files/[id]");
    expect(routeTemplate("/v1/messages/", table)).toBe("/v1/messages");
    expect(routeTemplate("/v1/nope", table)).toBe("/v1/[[...path]]");
    expect(routeTemplate("/wp-admin/setup.php", table)).toBe("unmatched");
    expect(routeTemplate("/_next/static/chunks/a1b2.js", table)).toBe("/_next/[...]");
  });

  it("without a build's manifest (next dev) folds ID-like segments", () => {
    expect(routeTemplate("/api/files/file_01jz8x9k2m", null)).toBe("/api/files/[id]");
    expect(routeTemplate("/api/inbound/ln_01m8911r1svcjbnws49kkjf72s", null)).toBe("/api/inbound/[id]");
    expect(routeTemplate("/dashboard/chats", null)).toBe("/dashboard/chats");
  });
});

describe("the request log and request metrics (every request any server of the process takes)", () => {
  let server: http.Server;
  let base: string;
  beforeAll(async () => {
    installHttpHook();
    server = http.createServer((req, res) => {
      if (req.url === "/v1/chats") {
        // As the /v1 wrapper does: authentication names the caller, the answer carries the request's ID.
        const requestId = requestIdOf(req.headers);
        annotateRequest(requestId, { accountId: "acct_test", keyId: "key_test" });
        res.writeHead(200, { "Content-Type": "application/json", "Request-Id": requestId });
        res.end(JSON.stringify({ data: [], text: "never logged", request_id: requestId }));
        return;
      }
      if (req.url === "/boom") {
        res.statusCode = 500;
        res.end();
        return;
      }
      res.end("plain"); // a page that sets no Request-Id
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("writes one JSON line per request whose request_id is the one the client got back", async () => {
    const { result, records } = await captureLog(async () => {
      const api = await fetch(`${base}/v1/chats?limit=5`.replace("?limit=5", ""));
      const page = await fetch(`${base}/dashboard/chats`);
      const failed = await fetch(`${base}/boom`);
      await Promise.all([api.text(), page.text(), failed.text()]);
      await new Promise((r) => setTimeout(r, 20)); // the log line is written when the response ends
      return { api, page, failed };
    });
    const requests = records.filter((r) => r.msg === "request");
    expect(requests).toHaveLength(3);
    const [api, page, failed] = requests;
    expect(api).toMatchObject({
      level: 30,
      request_id: result.api.headers.get("request-id"),
      method: "GET",
      route: "/v1/chats",
      status: 200,
      account_id: "acct_test",
      key_id: "key_test",
    });
    expect(api!.request_id).toMatch(/^req_/);
    expect(typeof api!.duration_ms).toBe("number");
    expect(typeof api!.time).toBe("string");
    // A response without a Request-Id gets the logged one.
    expect(page!.request_id).toBe(result.page.headers.get("request-id"));
    expect(page).not.toHaveProperty("account_id");
    expect(failed).toMatchObject({ level: 50, status: 500 });
    expect(JSON.stringify(records)).not.toContain("never logged");
    expect(openRequests()).toBe(0);
  });

  it("never logs a query string: an inbound URL's ?token= stays out of the JSON and the readable (npm run dev) line", async () => {
    const { records } = await captureLog(async () => {
      const res = await fetch(`${base}/api/inbound/ln_01m8911r1svcjbnws49kkjf72s?token=inbound-secret-123&password=pw-secret-456`);
      await res.text();
      await new Promise((r) => setTimeout(r, 20));
    });
    const line = records.find((r) => r.msg === "request" && String(r.path ?? r.route).startsWith("/api/inbound/"));
    expect(line).toBeDefined();
    for (const text of [JSON.stringify(records), readableLine(JSON.stringify(line))]) {
      expect(text).not.toContain("inbound-secret-123");
      expect(text).not.toContain("pw-secret-456");
    }
  });

  it("believes only its own request ID: one a client sends on the internal header is replaced", async () => {
    const { result, records } = await captureLog(async () => {
      const sent = { "x-relay-request-id": "req_01aaaaaaaaaaaaaaaaaaaaaaaa" };
      const res = await fetch(`${base}/v1/chats`, { headers: sent });
      const body = (await res.json()) as { request_id: string };
      await new Promise((r) => setTimeout(r, 20));
      return { header: res.headers.get("request-id"), body };
    });
    expect(result.header).toMatch(/^req_/);
    expect(result.header).not.toBe("req_01aaaaaaaaaaaaaaaaaaaaaaaa");
    expect(result.body.request_id).toBe(result.header);
    expect(records.filter((r) => r.msg === "request").map((r) => r.request_id)).toEqual([result.header]);
    // Outside a request the hook opened (a handler called directly), a sent value is not believed either.
    const forged = requestIdOf(new Headers({ "x-relay-request-id": "req_01aaaaaaaaaaaaaaaaaaaaaaaa" }));
    expect(forged).toMatch(/^req_/);
    expect(forged).not.toBe("req_01aaaaaaaaaaaaaaaaaaaaaaaa");
  });

  it("counts requests and their latency by route template, method and status", async () => {
    const before = sample((await scrape()).text, "relay_http_requests_total", { route: "/v1/chats", method: "GET", status: "200" });
    await (await fetch(`${base}/v1/chats`)).text();
    await new Promise((r) => setTimeout(r, 20));
    const text = (await scrape()).text;
    expect(sample(text, "relay_http_requests_total", { route: "/v1/chats", method: "GET", status: "200" })).toBe(before + 1);
    expect(sample(text, "relay_http_request_duration_seconds_count", { route: "/v1/chats", method: "GET", status: "200" })).toBe(before + 1);
    expect(sample(text, "relay_http_request_duration_seconds_bucket", { route: "/v1/chats", le: "+Inf" })).toBe(before + 1);
  });

  it("writes the request line as pino would write the same record", async () => {
    const record = {
      request_id: "req_01jz8x9k2m0000000000000000",
      method: "GET",
      route: "unmatched",
      path: '/a"b\\c\u2028',
      status: 503,
      duration_ms: 12.5,
      account_id: "acct_1",
      key_id: undefined,
    };
    const { records } = await captureLog(() => {
      logRequest(record);
      log().error(record, "request");
    });
    const [ours, pinos] = records.map(({ time, ...rest }) => {
      expect(time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      return rest;
    });
    expect(JSON.stringify(ours)).toBe(JSON.stringify(pinos));
    expect(ours).toMatchObject({ level: 50, path: '/a"b\\c\u2028', msg: "request" });
    expect(ours).not.toHaveProperty("key_id");
  });

  it("hands lines to stdout in order, in batches of about 16 KiB, the rest on flush", () => {
    const chunks: string[] = [];
    let synced = 0;
    const batch = new LineBatch({ write: (chunk) => chunks.push(chunk), flushSync: () => void synced++ });
    const lines = Array.from({ length: 100 }, (_, i) => `{"n":${i},"pad":"${"x".repeat(300)}"}\n`);
    for (const line of lines) batch.write(line);
    expect(chunks.length).toBe(1); // 16 KiB reached once in 100 lines of ~320 characters
    expect(chunks[0]!.length).toBeGreaterThanOrEqual(16 * 1024);
    batch.flush();
    batch.flush(); // nothing left: no empty write
    expect(chunks.length).toBe(2);
    expect(chunks.join("")).toBe(lines.join(""));
    batch.write(lines[0]!);
    batch.flushSync();
    expect(chunks.at(-1)).toBe(lines[0]);
    expect(synced).toBe(1);
  });

  it("sets stdout's batch up once per process, however often the logger is rebuilt", () => {
    resetLogger();
    log();
    const exitHooks = process.listenerCount("exit");
    for (let i = 0; i < 3; i++) {
      resetLogger();
      log();
    }
    expect(process.listenerCount("exit")).toBe(exitHooks);
  });

  it("prints records readably under npm run dev", () => {
    const line = readableLine(JSON.stringify({ level: 30, time: "2026-11-25T10:00:01.000Z", msg: "request", method: "GET", route: "/v1/chats", status: 200 }));
    expect(line).toBe("10:00:01 INFO  request method=GET route=/v1/chats status=200\n");
  });
});

describe("GET /metrics", () => {
  afterEach(() => {
    delete process.env.METRICS_TOKEN;
    resetConfig();
  });

  it("serves Prometheus text: queues from the database, sends, limits, provider lines, the Node process", async () => {
    const f = await makeAccount();
    await startRunner();
    try {
      await inbound(f, "+15550009999");
      const sent = await post("/v1/messages", f.key, { from: f.line.handle, to: "+15550009999", text: "counted" });
      expect(sent.status).toBe(200);
      const deadline = Date.now() + 10_000;
      while ((await get(`/v1/outbox?id=${sent.body.id}`, f.key)).body.status !== "sent" && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    } finally {
      await stopRunner();
    }
    errorAnswer(new ApiError("rate_limit_exceeded", "test"), "req_test");
    metrics().forgetDbFigures(); // an earlier scrape's figures may still be fresh
    const res = await scrape();
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = res.text;
    expect(sample(text, "relay_outbox_sends_total", { provider: "simulated", outcome: "sent" })).toBeGreaterThanOrEqual(1);
    expect(sample(text, "relay_rate_limit_rejections_total", { code: "rate_limit_exceeded" })).toBeGreaterThanOrEqual(1);
    expect(text).toMatch(/^relay_outbox_items\{status="pending"\} \d+$/m);
    expect(text).toMatch(/^relay_outbox_oldest_pending_age_seconds \d/m);
    expect(text).toMatch(/^relay_webhook_deliveries\{status="pending"\} \d+$/m);
    expect(sample(text, "relay_provider_lines", { provider: "simulated", status: "connected" })).toBeGreaterThanOrEqual(1);
    expect(sample(text, "relay_database_up")).toBe(1);
    expect(text).toMatch(/^# TYPE relay_webhook_attempt_duration_seconds histogram$/m);
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds /m);
    expect(text).toMatch(/^process_cpu_user_seconds_total /m);
  });

  it("with METRICS_TOKEN set, needs it as a bearer token", async () => {
    process.env.METRICS_TOKEN = "scrape-token-0123456789";
    resetConfig();
    const missing = await scrape();
    expect(missing.status).toBe(401);
    expect(missing.body.error.code).toBe("missing_api_key");
    expect(missing.body.request_id).toMatch(/^req_/);
    expect(missing.headers.get("www-authenticate")).toBe('Bearer realm="metrics"');
    expect((await scrape({ authorization: "Bearer scrape-token-0123456780" })).status).toBe(401);
    const ok = await scrape({ authorization: "Bearer scrape-token-0123456789" });
    expect(ok.status).toBe(200);
    expect(ok.text).toContain("relay_http_requests_total");
  });

  it("outside development, is 401 without METRICS_TOKEN (set or not: the server still runs), and /readyz shows details only with it", async () => {
    const env = process.env as Record<string, string | undefined>;
    const nodeEnv = env.NODE_ENV;
    try {
      env.NODE_ENV = "production";
      resetConfig();
      const closed = await scrape();
      expect(closed.status).toBe(401);
      expect(closed.body.error.code).toBe("missing_api_key");
      expect(closed.body.error.message).toContain("METRICS_TOKEN");
      expect(closed.body.request_id).toMatch(/^req_/);
      expect((await scrape({ authorization: "Bearer anything-at-all-0123" })).status).toBe(401);
      const bare = await get("/readyz");
      expect(Object.keys(bare.body)).toEqual(["status"]);

      process.env.METRICS_TOKEN = "scrape-token-0123456789";
      resetConfig();
      expect((await scrape()).status).toBe(401);
      expect((await scrape({ authorization: "Bearer scrape-token-0123456789" })).status).toBe(200);
      expect(Object.keys((await get("/readyz")).body)).toEqual(["status"]);
      const detailed = await dispatch(new Request("http://localhost:3000/readyz", { headers: { authorization: "Bearer scrape-token-0123456789" } }));
      expect((await detailed.json()).checks.database).toBeDefined();
    } finally {
      env.NODE_ENV = nodeEnv;
    }
  });

  it("refuses a malformed METRICS_TOKEN at startup, naming it", () => {
    for (const bad of ["short", "has spaces in it, sixteen+", "x".repeat(300)]) {
      let error: unknown;
      try {
        parseConfig({ METRICS_TOKEN: bad });
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).problems).toEqual([expect.stringMatching(/^METRICS_TOKEN: must be 16 to 256 characters/)]);
    }
  });
});

describe("GET /healthz and GET /readyz", () => {
  it("healthz answers without touching anything", async () => {
    const res = await get("/healthz");
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: "ok", shutting_down: false });
    expect(res.headers.get("cache-control")).toBe("no-store");
  });

  it("readyz is 503 naming what is wrong while the delivery runner is stopped, 200 once it runs", async () => {
    await makeAccount();
    const down = await get("/readyz");
    expect(down.status).toBe(503);
    expect(down.body.status).toBe("not_ready");
    expect(down.body.checks.delivery).toMatchObject({ ok: false, engine: "embedded", error: "a delivery loop is not running" });
    expect(down.body.checks.database).toMatchObject({ ok: true, migrations: { pending: [] } });
    await startRunner();
    startWebhookRunner();
    try {
      await new Promise((r) => setTimeout(r, 1_100)); // probes within a second share one answer
      const up = await get("/readyz");
      expect(up.status).toBe(200);
      expect(up.body).toMatchObject({
        status: "ready",
        checks: { database: { ok: true }, storage: { ok: true }, delivery: { ok: true, engine: "embedded" } },
      });
      expect(up.body.checks.database.migrations.applied).toBeGreaterThan(0);
      expect(up.body.lines.total).toBeGreaterThanOrEqual(1);
      expect(up.body.lines.by_status.connected).toBeGreaterThanOrEqual(1);
      // Nothing secret: no connection string, no credentials.
      const text = JSON.stringify(up.body);
      if (process.env.DATABASE_URL) expect(text).not.toContain(process.env.DATABASE_URL);
      expect(text).not.toMatch(/sk_(live|test)_|password|secret/i);
    } finally {
      await stopWebhookRunner();
      await stopRunner();
    }
  });
});

import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import http from "node:http";
import net, { type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, freshPostgresDatabase, stopWithSigterm, waitUntilUp } from "./harness";

// Running it in production, as an operator sees it from outside the process: the request log
// on stdout, /healthz, /readyz and /metrics, graceful shutdown on SIGTERM, and settings it
// cannot run with refused at startup in one line.

const START = path.resolve("scripts/start.mjs");
const TSX = path.resolve("node_modules/.bin/tsx");

interface Instance {
  base: string;
  child: ChildProcess;
  stdout: string[];
  stderr: string[];
  env: NodeJS.ProcessEnv;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function spawnServer(env: NodeJS.ProcessEnv, port: number): Instance {
  const child = spawn(process.execPath, [START, "-p", String(port), "-H", "127.0.0.1"], { env, stdio: ["ignore", "pipe", "pipe"] });
  const stdout: string[] = [];
  const stderr: string[] = [];
  let partial = "";
  child.stdout!.on("data", (chunk: Buffer) => {
    const lines = (partial + chunk.toString()).split("\n");
    partial = lines.pop()!;
    stdout.push(...lines);
  });
  child.stderr!.on("data", (chunk: Buffer) => stderr.push(...chunk.toString().split("\n").filter(Boolean)));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child.once("exit", (code, signal) => r({ code, signal })));
  return { base: `http://127.0.0.1:${port}`, child, stdout, stderr, env, exited };
}

function environment(dataDir: string, port: number, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_ENV: "production",
    SIMULATOR_ENABLED: "true",
    WEBHOOK_ALLOW_INSECURE: "true",
    NEXT_TELEMETRY_DISABLED: "1",
    DATA_DIR: dataDir,
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    PORT: String(port),
    SHUTDOWN_GRACE_SECONDS: "10",
  };
  for (const name of ["DATABASE_URL", "STORAGE_URL", "LOG_LEVEL", "METRICS_TOKEN"]) delete env[name];
  return { ...env, ...extra };
}

/** Waits (up to 10 s) until the server printed a line matching `pattern` on stdout; returns its index. */
async function printed(app: Instance, pattern: RegExp): Promise<number> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const at = app.stdout.findIndex((l) => pattern.test(l));
    if (at >= 0) return at;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`the server never printed ${pattern}; stdout:\n${app.stdout.join("\n")}`);
}

/** JSON log records the server printed. */
const records = (app: Instance) =>
  app.stdout.flatMap((line) => {
    try {
      return [JSON.parse(line) as Record<string, unknown>];
    } catch {
      return [];
    }
  });

describe("a production instance (npm start, embedded PGlite)", () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), "relay-prod-"));
  let port = 0;
  let app: Instance;
  let key = "";
  const line = "+15550007001";
  const contact = "+15550007002";
  const admin = (...args: string[]) => execFileSync(TSX, ["scripts/admin.ts", ...args], { env: app.env, encoding: "utf8" }).trim();
  const auth = () => ({ authorization: `Bearer ${key}`, "content-type": "application/json" });

  beforeAll(async () => {
    port = await freePort();
    app = spawnServer(environment(dataDir, port, { METRICS_TOKEN: "metrics-token-e2e-0123" }), port);
    await waitUntilUp(`${app.base}/healthz`, app.child, "npm start did not come up");
    admin("account", "create", "--email", "prod@example.com", "--password", "prod password 123");
    admin("line", "create", "--account", "prod@example.com", "--handle", line, "--advanced");
    key = admin("key", "create", "--account", "prod@example.com", "--name", "prod");
  });

  afterAll(async () => {
    await stopWithSigterm(app?.child, "npm start").catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("prints Ready after its banner, which gives the operator CLI's commands with the variables they need and suggests a provider line", async () => {
    const ready = await printed(app, /^> Ready on http:\/\/127\.0\.0\.1:\d+$/);
    // The banner is a log record: one JSON line in production.
    const message = (line: string): string => (line.startsWith("{") ? String((JSON.parse(line) as { msg?: unknown }).msg ?? "") : "");
    const banner = app.stdout.findIndex((l) => message(l).startsWith("Relay is ready on "));
    expect(banner).toBeGreaterThanOrEqual(0);
    expect(ready).toBeGreaterThan(banner);
    const text = message(app.stdout[banner]!);
    expect(text).toContain(`  DATA_DIR=${dataDir} npm run -s admin -- account create --email you@example.com`);
    expect(text).toContain("--provider bluebubbles --provider-config-file bluebubbles.json");
    expect(text).not.toMatch(/simulat|--advanced|NODE_ENV/);
  });

  it("is ready: database migrated, storage writable, delivery running; lines summarised (details only with METRICS_TOKEN)", async () => {
    const bare = await fetch(`${app.base}/readyz`);
    expect(bare.status).toBe(200);
    expect(await bare.json()).toEqual({ status: "ready" });
    const res = await fetch(`${app.base}/readyz`, { headers: { authorization: "Bearer metrics-token-e2e-0123" } });
    const body = await res.json();
    expect(res.status).toBe(200);
    expect(body).toMatchObject({
      status: "ready",
      checks: { database: { ok: true, kind: "pglite", migrations: { pending: [] } }, storage: { ok: true }, delivery: { ok: true, engine: "embedded" } },
      lines: { by_provider: { simulated: { connected: expect.any(Number) } } },
    });
    expect((await fetch(`${app.base}/healthz`)).status).toBe(200);
  });

  it("logs one JSON line per request with the request_id the client got, who called, and no secret", async () => {
    const res = await fetch(`${app.base}/v1/chats?from=${encodeURIComponent(line)}&limit=2`, { headers: auth() });
    expect(res.status).toBe(200);
    const requestId = res.headers.get("request-id");
    expect((await res.json()).request_id).toBe(requestId);
    // The log is buffered: a line reaches stdout within 250 ms.
    const deadline = Date.now() + 3_000;
    while (!records(app).some((r) => r.request_id === requestId) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const logged = records(app).find((r) => r.request_id === requestId);
    expect(logged).toMatchObject({ level: 30, msg: "request", method: "GET", route: "/v1/chats", status: 200, account_id: expect.stringMatching(/^acct_/), key_id: expect.stringMatching(/^key_/) });
    expect(typeof logged!.duration_ms).toBe("number");
    expect(app.stdout.join("\n")).not.toContain(key);
  });

  it("answers TRACE, PROPFIND, other methods on inbound URLs and requests Node's parser refuses in the JSON envelope", async () => {
    const send = (method: string, path: string, headers: Record<string, string> = {}) =>
      new Promise<{ status: number; allow?: string; requestId?: string; body: { error?: { code: string }; request_id?: string } }>((resolve, reject) => {
        const req = http.request(`${app.base}${path}`, { method, headers }, (res) => {
          let text = "";
          res.on("data", (c: Buffer) => (text += c));
          res.on("end", () => resolve({ status: res.statusCode!, allow: res.headers.allow, requestId: res.headers["request-id"] as string, body: JSON.parse(text) }));
        });
        req.on("error", reject);
        req.end();
      });
    for (const path of ["/healthz", "/v1/chats", "/api/graphql", "/api/inbound/ln_01m8911r1svcjbnws49kkjf72s?token=x"]) {
      const res = await send("TRACE", path);
      expect(res.status, path).toBe(405);
      expect(res.body.error?.code).toBe("method_not_allowed");
      expect(res.body.request_id).toBe(res.requestId);
      expect(res.allow).toBeTruthy();
    }
    expect((await send("PROPFIND", "/v1/chats")).body.error?.code).toBe("route_not_found");
    const get = await send("GET", "/api/inbound/ln_01m8911r1svcjbnws49kkjf72s?token=x");
    expect([get.status, get.allow, get.body.error?.code]).toEqual([405, "POST", "method_not_allowed"]);
    const body = JSON.stringify({ from: line, to: contact, text: "typed as text" });
    const textPlain = await fetch(`${app.base}/v1/messages`, { method: "POST", headers: { ...auth(), "content-type": "text/plain" }, body });
    expect(textPlain.status).toBe(415);
    expect((await textPlain.json()).error.code).toBe("unsupported_media_type");

    const raw = (bytes: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = net.connect(port, "127.0.0.1", () => socket.write(bytes));
        let text = "";
        socket.on("data", (c: Buffer) => (text += c));
        socket.on("error", reject);
        socket.on("close", () => resolve(text));
      });
    const big = await raw(`GET /v1/chats HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`);
    expect(big).toMatch(/^HTTP\/1\.1 431 /);
    expect(big).toMatch(/\r\nRequest-Id: req_/);
    expect(JSON.parse(big.slice(big.indexOf("\r\n\r\n") + 4)).error.code).toBe("request_headers_too_large");
  });

  it("serves /metrics only with its token, with request series by route template", async () => {
    expect((await fetch(`${app.base}/metrics`)).status).toBe(401);
    const res = await fetch(`${app.base}/metrics`, { headers: { authorization: "Bearer metrics-token-e2e-0123" } });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toMatch(/^relay_http_requests_total\{route="\/v1\/chats",method="GET",status="200"\} [1-9]/m);
    expect(text).toMatch(/^relay_outbox_items\{status="pending"\} \d+/m);
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds /m);
  });

  it("on SIGTERM finishes the webhook attempt under way, ends streams with a reconnect hint, exits 0; nothing is sent twice after a restart", async () => {
    // A receiver that takes 3 s to answer: the attempt is under way when SIGTERM arrives.
    const received: string[] = [];
    let answered = 0;
    const receiver = http.createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString()));
      req.on("end", () => {
        received.push(body);
        setTimeout(() => {
          res.writeHead(200).end("ok");
          answered++;
        }, 3_000);
      });
    });
    await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
    try {
      const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
      const hook = await fetch(`${app.base}/v1/webhooks`, { method: "POST", headers: auth(), body: JSON.stringify({ from: line, url: hookUrl, events: ["message.received"] }) });
      expect(hook.status).toBe(200);

      // A listen stream for the same events.
      const stream = await fetch(`${app.base}/v1/listen`, { headers: auth() });
      expect(stream.status).toBe(200);
      const streamText = (async () => {
        let text = "";
        const decoder = new TextDecoder();
        const reader = stream.body!.getReader();
        for (let r = await reader.read(); !r.done; r = await reader.read()) text += decoder.decode(r.value, { stream: true });
        return text;
      })();

      const inbound = await fetch(`${app.base}/api/simulator/messages`, { method: "POST", headers: auth(), body: JSON.stringify({ line, from: contact, text: "during shutdown" }) });
      expect(inbound.status).toBe(201);
      const deadline = Date.now() + 10_000;
      while (received.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(received).toHaveLength(1);

      const signalled = Date.now();
      app.child.kill("SIGTERM");
      await new Promise((r) => setTimeout(r, 300)); // the signal is handled asynchronously
      // Not ready any more (or no longer accepting): a load balancer stops sending traffic.
      const probe = await fetch(`${app.base}/readyz`).then((r) => r.status, () => "refused");
      expect([503, "refused"]).toContain(probe);
      const exit = await app.exited;
      expect(exit).toEqual({ code: 0, signal: null });
      expect(answered).toBe(1); // the attempt was let finish, not cut off
      expect(Date.now() - signalled).toBeLessThan(10_000);
      expect(await streamText).toMatch(/retry: \d+\n: server shutting down; reconnect to resume/);
      expect(records(app).some((r) => r.msg === "stopped")).toBe(true);

      // Restarted on the same data: the delivery was recorded as succeeded, and is not sent again.
      app = spawnServer(app.env, port);
      await waitUntilUp(`${app.base}/readyz`, app.child, "npm start did not come back");
      await new Promise((r) => setTimeout(r, 2_000));
      expect(received).toHaveLength(1);
      const hookId = (await hook.json()).id;
      const deliveries = await (await fetch(`${app.base}/v1/webhooks/deliveries?webhook_id=${hookId}`, { headers: auth() })).json();
      expect(deliveries.data.map((d: { status: string }) => d.status)).toEqual(["succeeded"]);
    } finally {
      receiver.close();
    }
  });
});

describe("settings it cannot run with are refused at startup, in one line naming the variable", () => {
  const cases: [string, Record<string, string>, RegExp][] = [
    ["a malformed STORAGE_URL", { STORAGE_URL: "s3://Not_A_Bucket" }, /^Relay cannot start: STORAGE_URL: /],
    ["an unreachable bucket", { STORAGE_URL: "s3://relay?endpoint=http://127.0.0.1:9&path_style=true", AWS_ACCESS_KEY_ID: "x", AWS_SECRET_ACCESS_KEY: "y" }, /^Relay cannot start: STORAGE_URL: .*127\.0\.0\.1:9/],
    ["a malformed METRICS_TOKEN", { METRICS_TOKEN: "short" }, /^Relay cannot start: METRICS_TOKEN: /],
  ];
  it.each(cases)("%s", async (_, extra, expected) => {
    const dataDir = mkdtempSync(path.join(tmpdir(), "relay-badcfg-"));
    try {
      const port = await freePort();
      const app = spawnServer(environment(dataDir, port, extra), port);
      let timer: NodeJS.Timeout | undefined;
      const exit = await Promise.race([app.exited, new Promise<"hung">((r) => (timer = setTimeout(() => r("hung"), 45_000)))]);
      clearTimeout(timer);
      if (exit === "hung") app.child.kill("SIGKILL");
      expect(exit).toEqual({ code: 1, signal: null });
      const refusals = app.stderr.filter((l) => l.startsWith("Relay cannot start"));
      expect(refusals).toHaveLength(1);
      expect(refusals[0]).toMatch(expected);
      expect(app.stderr.join("\n")).not.toMatch(/^\s+at /m); // no stack trace
      expect(app.stdout.join("\n")).not.toMatch(/Ready on|Relay is ready/); // never "Ready" before a refusal
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe("a production instance on PostgreSQL and the operator CLI (issue 37, item 11)", () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), "relay-prod-pg-"));
  let app: Instance | undefined;
  let database: Awaited<ReturnType<typeof freshPostgresDatabase>> | undefined;
  /** The CLI as a new user ran it, in this folder. */
  /** The database as the server and the CLI name it: host:port/name. */
  const at = () => `${new URL(database!.url).host}${new URL(database!.url).pathname}`;
  const admin = (env: NodeJS.ProcessEnv, ...args: string[]) => spawnSync(TSX, ["scripts/admin.ts", ...args], { env, encoding: "utf8", timeout: 60_000 });

  beforeAll(async () => {
    database = await freshPostgresDatabase();
    const port = await freePort();
    app = spawnServer(environment(dataDir, port, { DATABASE_URL: database.url, CREDENTIALS_KEY: "e2e-credentials-key-0123456789abcdefghij" }), port);
    await waitUntilUp(`${app.base}/healthz`, app.child, "npm start on PostgreSQL did not come up");
  });

  afterAll(async () => {
    await stopWithSigterm(app?.child, "npm start").catch(() => undefined);
    await database?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("prints the CLI's commands with DATABASE_URL and the credentials key masked", async () => {
    const ready = await printed(app!, /^> Ready on /);
    const text = app!.stdout.slice(0, ready).join("\n");
    expect(text).toContain(`database: PostgreSQL at ${at()};`);
    expect(text).toContain(`  DATABASE_URL='${database!.url}' DATA_DIR=${dataDir} CREDENTIALS_KEY=**** npm run -s admin -- account create`);
    expect(text).not.toContain("e2e-credentials-key");
  });

  it("refuses to write to the embedded database of the server's DATA_DIR without DATABASE_URL; with it, says where it wrote", () => {
    // As a new user's shell had it: no DATABASE_URL, no NODE_ENV.
    const withoutUrl = Object.fromEntries(Object.entries(app!.env).filter(([name]) => name !== "DATABASE_URL" && name !== "NODE_ENV")) as NodeJS.ProcessEnv;
    const refused = admin(withoutUrl, "account", "create", "--email", "pg-user@example.com");
    expect(refused.status).toBe(1);
    expect(refused.stdout).toBe("");
    expect(refused.stderr).toMatch(/^error: a server \(pid \d+, NODE_ENV=production\) runs on DATA_DIR /);
    expect(refused.stderr).toContain(` with PostgreSQL at ${at()}, but this command would use the embedded database in ${dataDir}: give the CLI the server's DATABASE_URL`);
    expect(readdirSync(dataDir)).not.toContain("pglite");

    const created = admin(app!.env, "account", "create", "--email", "pg-user@example.com");
    expect(created.status, created.stderr).toBe(0);
    expect(created.stderr.split("\n")[0]).toBe(`using PostgreSQL at ${at()}, data directory ${dataDir}`);
    expect(created.stdout.trim()).toMatch(/^acct_/);
  });
});

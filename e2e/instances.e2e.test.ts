import type { ChildProcess } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type S3Server, startS3 } from "../tests/s3";
import { adminCli, adminCliAsync, freePort, freshPostgresDatabase, spawnStart, stopWithSigterm, waitUntilUp } from "./harness";

// Several production instances (`npm start`) behind no proxy, sharing only what an operator
// shares between replicas: one PostgreSQL database, one S3-compatible bucket (s3rver), the same
// CREDENTIALS_KEY. Each has its own empty DATA_DIR, so nothing passes through local disk. Driven
// over HTTP, with the shared database read directly to count what was stored.

interface Instance {
  name: string;
  port: number;
  base: string;
  dataDir: string;
  env: NodeJS.ProcessEnv;
  child: ChildProcess;
}

interface SseEvent<T> {
  event: string;
  data: T;
}

const CREDENTIALS_KEY = randomBytes(32).toString("base64");
/** Operators see /readyz's details with it (outside development, never without one). */
const METRICS_TOKEN = "metrics-token-e2e-0123";
const LINE = "+15550100100";
const EMAIL = "instances@example.com";
const MIGRATIONS = readdirSync("prisma/migrations", { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => d.name)
  .sort();

let database: Awaited<ReturnType<typeof freshPostgresDatabase>>;
let s3: S3Server;
let db: pg.Client;
const started: Instance[] = [];
let A: Instance;
let B: Instance;
/** Keys made by the operator CLI: a main one, one limited to RATE_LIMIT requests an hour, one to revoke. */
let key = "";
let limitedKey = "";
let revocableKey = "";
const RATE_LIMIT = 50;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const headers = (k = key, extra: Record<string, string> = {}) => ({ authorization: `Bearer ${k}`, "content-type": "application/json", ...extra });
const keyHash = (secret: string) => createHash("sha256").update(secret).digest("hex");
const query = async <T extends pg.QueryResultRow>(text: string, params: unknown[] = []) => (await db.query<T>(text, params)).rows;
/** The first row of a query that always answers one (a count). */
const one = async <T extends pg.QueryResultRow>(text: string, params: unknown[] = []) => (await query<T>(text, params))[0]!;

/** An instance's settings and its own empty DATA_DIR; launch() starts it. */
async function instance(name: string): Promise<Omit<Instance, "child">> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const dataDir = mkdtempSync(path.join(tmpdir(), `relay-instance-${name}-`));
  // What replicas share (the same on every instance), then what is each one's own.
  const shared = { NODE_ENV: "production" as const, METRICS_TOKEN, SIMULATOR_ENABLED: "true", WEBHOOK_ALLOW_INSECURE: "true", SHUTDOWN_GRACE_SECONDS: "10", DATABASE_URL: database.url, CREDENTIALS_KEY, ...s3.env };
  const env: NodeJS.ProcessEnv = { ...process.env, NEXT_TELEMETRY_DISABLED: "1", ...shared, DATA_DIR: dataDir, PUBLIC_URL: base, PORT: String(port) };
  for (const name of ["DATABASE_SCHEMA", "FILES_PUBLIC_URL", "API_KEY_CACHE_SECONDS", "RATE_LIMIT_PER_HOUR", "INNGEST_EVENT_KEY", "INNGEST_DEV"]) delete env[name];
  return { name, port, base, dataDir, env };
}

function launch(settings: Omit<Instance, "child">): Instance {
  const i = { ...settings, child: spawnStart(settings.port, settings.env) };
  started.push(i);
  return i;
}

const ready = (i: Instance, timeoutMs = 45_000) => waitUntilUp(`${i.base}/readyz`, i.child, `instance ${i.name} did not become ready`, timeoutMs);

const exited = (child: ChildProcess) =>
  child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise<void>((r) => child.once("exit", () => r()));

async function waitUntil(what: string, timeoutMs: number, done: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs / 1000} s`);
    await sleep(200);
  }
}

/** Runs task(0..count-1) on `lanes` concurrent lanes; results in index order. */
async function pool<T>(count: number, lanes: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array(count);
  await Promise.all(
    Array.from({ length: lanes }, async (_, lane) => {
      for (let i = lane; i < count; i += lanes) results[i] = await task(i);
    }),
  );
  return results;
}

/** The simulated other phone texts the line, through `via`: the contact may then be messaged. */
async function inbound(via: Instance, from: string, text: string): Promise<{ id: string; chat_id: string }> {
  const res = await fetch(`${via.base}/api/simulator/messages`, { method: "POST", headers: headers(), body: JSON.stringify({ line: LINE, from, text }) });
  expect(res.status).toBe(201);
  return res.json();
}

const send = (via: Instance, body: object, k = key, extra: Record<string, string> = {}) =>
  fetch(`${via.base}/v1/messages`, { method: "POST", headers: headers(k, extra), body: JSON.stringify(body) });

/** Reads server-sent events from a streaming response (comments skipped). */
function sse<T>(res: Response) {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  async function next(): Promise<SseEvent<T>> {
    for (;;) {
      const end = buffer.indexOf("\n\n");
      if (end >= 0) {
        const lines = buffer.slice(0, end).split("\n").filter((l) => l && !l.startsWith(":"));
        buffer = buffer.slice(end + 2);
        const data = lines.filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("\n");
        if (!data) continue;
        return { event: lines.find((l) => l.startsWith("event:"))?.slice(6).trim() ?? "message", data: JSON.parse(data) };
      }
      const { value, done } = await reader.read();
      if (done) throw new Error("the event stream ended");
      buffer += decoder.decode(value, { stream: true });
    }
  }
  /** The first event matching `match`, skipping others; fails after `timeoutMs`. */
  async function until(what: string, match: (e: SseEvent<T>) => boolean, timeoutMs = 15_000): Promise<SseEvent<T>> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no ${what} within ${timeoutMs / 1000} s`)), timeoutMs)));
    try {
      return await Promise.race([
        (async () => {
          for (;;) {
            const e = await next();
            if (match(e)) return e;
          }
        })(),
        timeout,
      ]);
    } finally {
      clearTimeout(timer);
    }
  }
  return { until, close: () => reader.cancel().catch(() => undefined) };
}

/** A GraphQL subscription over server-sent events on `via`. */
async function subscribe<T>(via: Instance, subscription: string, variables: Record<string, unknown>) {
  const res = await fetch(`${via.base}/api/graphql`, {
    method: "POST",
    headers: headers(key, { accept: "text/event-stream" }),
    body: JSON.stringify({ query: subscription, variables }),
  });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toContain("text/event-stream");
  return sse<{ data?: T; errors?: unknown[] }>(res);
}

beforeAll(async () => {
  database = await freshPostgresDatabase("relay_instances");
  db = new pg.Client({ connectionString: database.url });
  await db.connect();
  s3 = await startS3({ bucket: "relay-instances" });
});

afterAll(async () => {
  for (const i of started) {
    i.child.kill("SIGCONT"); // in case a failure left one frozen
    await stopWithSigterm(i.child, `instance ${i.name}`).catch(() => undefined);
    rmSync(i.dataDir, { recursive: true, force: true });
  }
  await db?.end();
  await database?.drop();
  await s3?.stop();
});

describe("several instances on one PostgreSQL database and one S3 bucket", () => {
  it("three instances started at the same moment on a fresh database all become ready, and each migration is applied once", async () => {
    const settings = await Promise.all(["A", "B", "C"].map(instance));
    const t0 = Date.now();
    const trio = settings.map(launch); // the same tick: all three find the database empty
    const outcomes = await Promise.allSettled(trio.map((i) => ready(i)));
    console.log(`3 instances started at once: ${outcomes.map((o, n) => `${trio[n]!.name} ${o.status === "fulfilled" ? "ready" : "NOT ready"}`).join(", ")} after ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    // An instance that did not come up is replaced (killed, started again on the now migrated
    // database), so the tests after this one still run; this one fails all the same, saying
    // what the instance answered while it was up.
    const answered = (i: Instance, p: string) => fetch(`${i.base}${p}`).then((r) => `${p} ${r.status}`, () => `${p} refused`);
    const failures: string[] = [];
    for (const [n, o] of outcomes.entries()) {
      if (o.status === "fulfilled") continue;
      const i = trio[n]!;
      const alive = i.child.exitCode === null && i.child.signalCode === null;
      failures.push(`${String(o.reason)} (process ${alive ? "still running" : "exited"}; ${await answered(i, "/healthz")}, ${await answered(i, "/readyz")})`);
      i.child.kill("SIGKILL");
      await exited(i.child);
      i.child = spawnStart(i.port, i.env);
      await ready(i);
    }
    [A, B] = trio as [Instance, Instance];
    const C = trio[2]!;
    // Everything observed first: C is stopped before any assertion can end this test, so the
    // tests after it have exactly two instances.
    const readiness = await Promise.all(
      trio.map(async (i) => {
        const res = await fetch(`${i.base}/readyz`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } }); // details need the token
        return { status: res.status, body: await res.json() };
      }),
    );
    const applied = await query<{ migration_name: string; n: number; finished: boolean }>(
      `SELECT migration_name, count(*)::int AS n, bool_and(finished_at IS NOT NULL AND rolled_back_at IS NULL) AS finished
       FROM "_prisma_migrations" GROUP BY migration_name ORDER BY migration_name`,
    );
    const sandboxLines = await query(`SELECT count(*)::int AS n FROM "Line" WHERE "isSandbox"`);
    const stoppedC = await stopWithSigterm(C.child, "instance C");

    expect(failures).toEqual([]);
    for (const { status, body } of readiness) {
      expect(status).toBe(200);
      expect(body).toMatchObject({
        status: "ready",
        checks: {
          database: { ok: true, kind: "postgres", migrations: { applied: MIGRATIONS.length, pending: [] } },
          storage: { ok: true, kind: "s3" },
          delivery: { ok: true, engine: "embedded" },
        },
      });
    }
    expect(applied).toEqual(MIGRATIONS.map((migration_name) => ({ migration_name, n: 1, finished: true })));
    // What the first start creates besides the schema exists once too.
    expect(sandboxLines).toEqual([{ n: 1 }]);
    // Nothing on local disk is needed: no instance keeps files or a credentials key of its own.
    for (const i of trio) expect(readdirSync(i.dataDir).filter((f) => f === "files" || f === "credentials.key")).toEqual([]);
    expect(stoppedC).toEqual({ code: 0, signal: null });
  });

  describe("A and B", () => {
    beforeAll(async () => {
      adminCli(A.env, "account", "create", "--email", EMAIL, "--password", "instances password 123");
      const made = await Promise.all([
        adminCliAsync(B.env, "line", "create", "--account", EMAIL, "--handle", LINE, "--advanced"),
        adminCliAsync(A.env, "key", "create", "--account", EMAIL, "--name", "main", "--rate-limit", "1000000"),
        adminCliAsync(B.env, "key", "create", "--account", EMAIL, "--name", "limited", "--rate-limit", String(RATE_LIMIT)),
        adminCliAsync(A.env, "key", "create", "--account", EMAIL, "--name", "revocable"),
      ]);
      [, key, limitedKey, revocableKey] = made as [string, string, string, string];
      expect([key, limitedKey, revocableKey]).toEqual(Array(3).fill(expect.stringMatching(/^sk_live_/)));
    });

    it("sends spread over both instances are all delivered: every accepted item sent, one message each", async () => {
      const contact = "+15550102002";
      await inbound(B, contact, "hello");
      const t0 = Date.now();
      const answers = await pool(400, 16, async (i) => {
        const via = i % 2 ? B : A;
        const res = await send(via, { from: LINE, to: contact, text: `spread ${i}` });
        return { status: res.status, id: res.status === 200 ? ((await res.json()) as { id: string }).id : null };
      });
      const accepted = Date.now() - t0;
      expect(answers.filter((a) => a.status !== 200)).toEqual([]);
      const ids = answers.map((a) => a.id!);
      expect(new Set(ids).size).toBe(400);
      await waitUntil("all 400 items delivered", 60_000, async () => {
        const { n } = await one<{ n: number }>(`SELECT count(*)::int AS n FROM "OutboxItem" WHERE id = ANY($1) AND status IN ('pending', 'claimed')`, [ids]);
        return n === 0;
      });
      const items = await query<{ id: string; status: string; claimed_by: string; messages: number }>(
        `SELECT o.id, o.status, o."claimedBy" AS claimed_by, count(m.id)::int AS messages
         FROM "OutboxItem" o LEFT JOIN "Message" m ON m."outboxId" = o.id WHERE o.id = ANY($1) GROUP BY o.id`,
        [ids],
      );
      expect(items).toHaveLength(400);
      expect(items.filter((i) => i.status !== "sent" || i.messages !== 1)).toEqual([]); // 0 lost, 0 duplicated
      // Stored once whatever the outbox says: each text is one message on the chat.
      const { total, distinct } = await one<{ total: number; distinct: number }>(
        `SELECT count(*)::int AS total, count(DISTINCT text)::int AS distinct FROM "Message" WHERE "isFromMe" AND text LIKE 'spread %'`,
      );
      expect({ total, distinct }).toEqual({ total: 400, distinct: 400 });
      const byA = items.filter((i) => i.claimed_by.startsWith(`${A.child.pid}-`)).length;
      const byB = items.filter((i) => i.claimed_by.startsWith(`${B.child.pid}-`)).length;
      console.log(`400 sends over A and B: accepted in ${accepted} ms, all sent ${Date.now() - t0} ms after the first; delivered by A's runner ${byA}, by B's ${byB}`);
      expect(byA + byB).toBe(400);
      expect(byA).toBeGreaterThan(0); // both runners took part
      expect(byB).toBeGreaterThan(0);
    });

    it("a GraphQL subscription and a /v1/listen stream on A see messages sent and received through B", async () => {
      const contact = "+15550103003";
      await inbound(A, contact, "first");
      type Received = { messageReceived: { id: string; text: string } };
      type Outbox = { outboxItemUpdated: { status: string; outboxId: string } };
      type Delivery = { event: string; data: { id: string; text: string; outbox_id: string | null } };
      const received = await subscribe<Received>(A, `subscription($from: String) { messageReceived(from: $from) { id text } }`, { from: LINE });
      const outbox = await subscribe<Outbox>(A, `subscription($from: String, $to: String) { outboxItemUpdated(from: $from, to: $to) { status outboxId } }`, {
        from: LINE,
        to: contact,
      });
      const listenRes = await fetch(`${A.base}/v1/listen?events=message.received,message.sent`, { headers: headers() });
      expect(listenRes.status).toBe(200);
      const listen = sse<Delivery & { session?: string }>(listenRes);
      try {
        expect((await listen.until("session event", (e) => e.event === "session")).data.session).toMatch(/^lsn_/);

        const incoming = await inbound(B, contact, "inbound through B");
        const res = await send(B, { from: LINE, to: contact, text: "sent through B" });
        expect(res.status).toBe(200);
        const { id: outboxId } = (await res.json()) as { id: string };

        const got = await received.until("messageReceived", (e) => e.data.data?.messageReceived.id === incoming.id);
        expect(got.data.data!.messageReceived.text).toBe("inbound through B");
        await outbox.until("outboxItemUpdated pending", (e) => e.data.data?.outboxItemUpdated.outboxId === outboxId && e.data.data.outboxItemUpdated.status === "pending");
        await outbox.until("outboxItemUpdated sent", (e) => e.data.data?.outboxItemUpdated.outboxId === outboxId && e.data.data.outboxItemUpdated.status === "sent");

        const seen: Delivery[] = [];
        await listen.until("message.received and message.sent", (e) => {
          if (e.data.data?.id === incoming.id || e.data.data?.outbox_id === outboxId) seen.push(e.data);
          return seen.length === 2;
        });
        expect(seen.map((d) => [d.event, d.data.text]).sort()).toEqual([
          ["message.received", "inbound through B"],
          ["message.sent", "sent through B"],
        ]);
      } finally {
        await Promise.all([received.close(), outbox.close(), listen.close()]);
      }
    });

    it(`the hourly limit of a key holds across both: ${RATE_LIMIT} requests succeed over A and B together, then 429`, async () => {
      // The limit is per clock hour: not across the hour's end.
      const left = 3_600_000 - (Date.now() % 3_600_000);
      if (left < 30_000) await sleep(left + 1_000);
      const answers = await pool(RATE_LIMIT * 2, 10, async (i) => {
        const via = i % 2 ? B : A;
        const res = await fetch(`${via.base}/v1/lines`, { headers: headers(limitedKey) });
        const body = (await res.json()) as { error?: { code: string } };
        return { via: via.name, status: res.status, code: body.error?.code ?? null, retryAfter: res.headers.get("retry-after") };
      });
      const ok = answers.filter((a) => a.status === 200);
      const refused = answers.filter((a) => a.status !== 200);
      console.log(`rate limit ${RATE_LIMIT}/h, ${answers.length} requests alternating A/B: ${ok.length} succeeded (A ${ok.filter((a) => a.via === "A").length}, B ${ok.filter((a) => a.via === "B").length}), ${refused.length} refused`);
      expect(ok).toHaveLength(RATE_LIMIT);
      expect(refused.every((a) => a.status === 429 && a.code === "rate_limit_exceeded" && Number(a.retryAfter) >= 1)).toBe(true);
      // Still refused on both once spent.
      for (const via of [A, B]) expect((await fetch(`${via.base}/v1/lines`, { headers: headers(limitedKey) })).status).toBe(429);
    });

    it("the same Idempotency-Key on A then on B gives one outbox item, replayed on B (and once when both race)", async () => {
      const contact = "+15550105005";
      await inbound(A, contact, "hi");
      const body = { from: LINE, to: contact, text: "idempotent across instances" };
      const first = await send(A, body, key, { "idempotency-key": "instances-1" });
      expect(first.status).toBe(200);
      expect(first.headers.get("idempotent-replayed")).toBe("false");
      const { id } = (await first.json()) as { id: string };
      const again = await send(B, body, key, { "idempotency-key": "instances-1" });
      expect(again.status).toBe(200);
      expect(again.headers.get("idempotent-replayed")).toBe("true");
      expect(((await again.json()) as { id: string }).id).toBe(id);

      // Both at the same moment: one runs, the other waits for it and replays it.
      const raced = { ...body, text: "idempotent race" };
      const both = await Promise.all([A, B].map((via) => send(via, raced, key, { "idempotency-key": "instances-2" })));
      expect(both.map((r) => r.status)).toEqual([200, 200]);
      expect(both.map((r) => r.headers.get("idempotent-replayed")).sort()).toEqual(["false", "true"]);
      const ids = await Promise.all(both.map(async (r) => ((await r.json()) as { id: string }).id));
      expect(ids[0]).toBe(ids[1]);

      const stored = await query<{ text: string; n: number }>(
        `SELECT payload->>'text' AS text, count(*)::int AS n FROM "OutboxItem" WHERE payload->>'text' IN ('idempotent across instances', 'idempotent race') GROUP BY 1 ORDER BY 1`,
      );
      expect(stored).toEqual([
        { text: "idempotent across instances", n: 1 },
        { text: "idempotent race", n: 1 },
      ]);
    });

    it("a file uploaded through A downloads through B with identical bytes (signed URL and GET /v1/files)", async () => {
      const bytes = randomBytes(1024 * 1024);
      const up = await fetch(`${A.base}/v1/files`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/octet-stream", "x-filename": "random.bin" },
        body: bytes,
      });
      expect(up.status).toBe(201);
      const file = (await up.json()) as { id: string; url: string; size: number };
      expect(file.size).toBe(bytes.length);
      expect(file.url.startsWith(`${A.base}/api/files/`)).toBe(true);
      const sha = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

      // A's signed link, asked of B: the signing secret and the bytes are shared, not local.
      const link = new URL(file.url);
      const viaB = await fetch(`${B.base}${link.pathname}${link.search}`);
      expect(viaB.status).toBe(200);
      expect(sha(new Uint8Array(await viaB.arrayBuffer()))).toBe(sha(bytes));

      // B's own link for it.
      const redirect = await fetch(`${B.base}/v1/files?id=${file.id}`, { headers: { authorization: `Bearer ${key}` }, redirect: "manual" });
      expect(redirect.status).toBe(302);
      const location = redirect.headers.get("location")!;
      expect(location.startsWith(`${B.base}/api/files/${file.id}`)).toBe(true);
      expect(sha(new Uint8Array(await (await fetch(location)).arrayBuffer()))).toBe(sha(bytes));
      for (const i of [A, B]) expect(existsSync(path.join(i.dataDir, "files"))).toBe(false);
    });

    it("a key revoked with the operator CLI stops working on both instances within API_KEY_CACHE_SECONDS (5 s)", async () => {
      // Both instances use the key continuously, so each holds it in its cache when it is revoked.
      const refusedAt = new Map<string, number>();
      let polling = true;
      const pollers = [A, B].map(async (via) => {
        while (polling && !refusedAt.has(via.name)) {
          const status = (await fetch(`${via.base}/v1/lines`, { headers: headers(revocableKey) })).status;
          if (status === 401) refusedAt.set(via.name, Date.now());
          else expect(status).toBe(200);
          await sleep(100);
        }
      });
      try {
        await sleep(1_000);
        await adminCliAsync(A.env, "key", "revoke", "--key", revocableKey);
        await waitUntil("both instances refusing the revoked key", 15_000, async () => refusedAt.size === 2);
      } finally {
        polling = false;
        await Promise.all(pollers);
      }
      // The revocation's own timestamp, written by the CLI's process on this machine's clock.
      const { revoked_at } = await one<{ revoked_at: Date }>(`SELECT "revokedAt" AS revoked_at FROM "ApiKey" WHERE hash = $1`, [keyHash(revocableKey)]);
      const lag = Object.fromEntries([...refusedAt].map(([name, at]) => [name, at - revoked_at.getTime()]));
      console.log(`revoked key refused ${lag.A} ms (A) and ${lag.B} ms (B) after the revocation`);
      for (const name of ["A", "B"]) expect(lag[name]).toBeLessThanOrEqual(5_000 + 1_000); // the cache window, plus a poll and a request
    });

    it("kill -9 of one instance mid-burst loses nothing: items it held are sent exactly once by the other after their lease", async () => {
      const contact = "+15550108008";
      await inbound(B, contact, "hi");
      const accepted = new Map<string, string>();
      const refused: number[] = [];
      let unanswered = 0;
      let aDead = false;
      let stop = false;
      const burst = Promise.all(
        Array.from({ length: 12 }, async (_, lane) => {
          for (let i = lane; !stop; i += 12) {
            const via = i % 2 && !aDead ? A : B;
            try {
              const res = await send(via, { from: LINE, to: contact, text: `burst ${i}` });
              if (res.status === 200) accepted.set(((await res.json()) as { id: string }).id, via.name);
              else refused.push(res.status);
            } catch {
              unanswered++; // cut off by the kill: the item may or may not exist
            }
          }
        }),
      );
      await waitUntil("150 sends accepted", 30_000, async () => accepted.size >= 150);

      // Freeze A (SIGSTOP) at a moment it holds claimed items, read them, and kill it there: a
      // kill -9 at that instant, with the claims known.
      const mine = `${A.child.pid}-%`;
      let held: { id: string; lease: Date }[] = [];
      for (let attempt = 0; attempt < 150 && held.length === 0; attempt++) {
        A.child.kill("SIGSTOP");
        // A statement A sent just before the stop still runs in PostgreSQL (a claimed item marked
        // sent, say): let it finish, so that what is read as held is what A can no longer touch.
        await sleep(150);
        held = await query<{ id: string; lease: Date }>(`SELECT id, "leaseExpiresAt" AS lease FROM "OutboxItem" WHERE status = 'claimed' AND "claimedBy" LIKE $1`, [mine]);
        if (held.length === 0) {
          A.child.kill("SIGCONT");
          await sleep(5);
        }
      }
      const killedAt = Date.now();
      A.child.kill("SIGKILL");
      await exited(A.child);
      aDead = true;
      expect(held.length, "A never held a claimed item during the burst").toBeGreaterThan(0);
      await sleep(2_000); // B alone keeps taking sends meanwhile
      stop = true;
      await burst;
      expect(refused).toEqual([]); // every request answered was accepted

      // The burst's items, accepted or cut off: none left behind.
      const open = async () =>
        (await one<{ n: number }>(`SELECT count(*)::int AS n FROM "OutboxItem" WHERE payload->>'text' LIKE 'burst %' AND status IN ('pending', 'claimed')`)).n;
      await waitUntil("every burst item finished", 85_000, async () => (await open()) === 0);
      const finishedIn = Date.now() - killedAt;
      const items = await query<{ id: string; status: string; claimed_by: string; completed_at: Date; messages: number }>(
        `SELECT o.id, o.status, o."claimedBy" AS claimed_by, o."completedAt" AS completed_at, count(m.id)::int AS messages
         FROM "OutboxItem" o LEFT JOIN "Message" m ON m."outboxId" = o.id WHERE o.payload->>'text' LIKE 'burst %' GROUP BY o.id`,
      );
      const byId = new Map(items.map((i) => [i.id, i]));
      // Every accepted item sent, every item (answered or not) stored as exactly one message.
      expect([...accepted.keys()].filter((id) => byId.get(id)?.status !== "sent")).toEqual([]);
      expect(items.filter((i) => i.status !== "sent" || i.messages !== 1)).toEqual([]);
      const { total, distinct } = await one<{ total: number; distinct: number }>(
        `SELECT count(*)::int AS total, count(DISTINCT text)::int AS distinct FROM "Message" WHERE "isFromMe" AND text LIKE 'burst %'`,
      );
      expect(total).toBe(distinct);
      // What A held at its death was sent by B, and only once its lease had run out.
      for (const h of held) {
        const item = byId.get(h.id)!;
        expect(item.claimed_by.startsWith(`${B.child.pid}-`)).toBe(true);
        expect(item.completed_at.getTime()).toBeGreaterThanOrEqual(h.lease.getTime());
      }
      const viaA = [...accepted.values()].filter((v) => v === "A").length;
      console.log(
        `kill -9 mid-burst: ${accepted.size} accepted (A ${viaA}, B ${accepted.size - viaA}), ${unanswered} cut off, ${items.length} stored, ${held.length} held by A at its death; all sent once, ${(finishedIn / 1000).toFixed(1)} s after the kill`,
      );
    }, 150_000);
  });
});

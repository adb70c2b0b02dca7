import { afterAll, afterEach, describe, expect, it } from "vitest";
import { handleAuth } from "@/server/transports/auth-route";
import { resetConfig } from "@/server/kernel/config";
import { type Database, openDatabase } from "@/server/db";
import { Prisma } from "@/server/generated/prisma/client";
import { forgetCachedLines } from "@/server/services/lines/lines";
import { type FakeBlueBubbles, startFakeBlueBubbles } from "./fakes/bluebubbles";
import { blueBubblesLine, call, expectRequestId, get, gql, makeAccount, makeKey, phone, post } from "./helpers";

// While the database is unreachable or overloaded the service says so: 503 service_unavailable
// with Retry-After and a request_id on every transport, never an authentication error or a 500;
// provider webhooks get 503 (the provider retries); GET /readyz names the cause; and after
// DATABASE_FAILURE_EXIT_SECONDS of failing queries GET /healthz fails so the process is restarted.

process.env.DATABASE_FAILURE_EXIT_SECONDS = "1";
resetConfig();

const holder = (globalThis as unknown as Record<symbol, { db?: Promise<Database> }>)[Symbol.for("relay.database")]!;
let real: Promise<Database> | undefined;
let broken: Database | undefined;

/** Points the process at a PostgreSQL port nobody listens on (127.0.0.1:1): every query fails to connect. */
async function breakDatabase(): Promise<void> {
  real = holder.db;
  broken = await openDatabase({ url: "postgresql://postgres@127.0.0.1:1/none", skipMigrations: true, poolSize: 1 });
  holder.db = Promise.resolve(broken);
}

/** Every query fails as an overloaded pool does (Prisma's transaction-start timeout). */
function overloadDatabase(): void {
  real = holder.db;
  const busy = () => {
    throw new Prisma.PrismaClientKnownRequestError("Transaction API error: Unable to start a transaction in the given time.", { code: "P2028", clientVersion: Prisma.prismaVersion.client });
  };
  const prisma = new Proxy({}, { get: () => new Proxy(busy, { get: () => busy }) });
  holder.db = Promise.resolve({ kind: "postgres", prisma, close: async () => {} } as unknown as Database);
}

async function restore(): Promise<void> {
  if (real) holder.db = real;
  real = undefined;
  await broken?.close().catch(() => undefined);
  broken = undefined;
}

afterEach(restore);

const fakes: FakeBlueBubbles[] = [];
afterAll(async () => {
  await Promise.all(fakes.map((f) => f.close()));
});

describe("an unreachable database", () => {
  it("answers 503 service_unavailable with request_id, never invalid_api_key, on /v1, the simulator and GraphQL", async () => {
    const f = await makeAccount();
    const fresh = await makeKey(f.accountId); // never used: not in the key cache
    await breakDatabase();
    for (const res of [await get("/v1/chats", fresh), await get("/v1/chats", f.key), await post("/api/simulator/messages", fresh, { line: f.line.handle, from: phone(), text: "hi" })]) {
      expect(res.status).toBe(503);
      expect(res.body.error).toMatchObject({ type: "api_error", code: "service_unavailable" });
      expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
      expectRequestId(res);
    }
    const graph = await gql(fresh, "{ lines { edges { node { id } } } }");
    expect(graph.status).toBe(503);
    expect(graph.body.errors[0].extensions).toMatchObject({ code: "service_unavailable" });
    // A malformed key is still refused as such: nothing needs the database to say so.
    expect((await get("/v1/chats", "sk_live_short")).status).toBe(401);
  });

  it("answers a dashboard sign-in 503 service_unavailable, not a failed sign-in", async () => {
    await breakDatabase();
    const body = new URLSearchParams({ email: "someone@example.com", password: "right-password-1", csrfToken: "t", json: "true" });
    const request = new Request("http://localhost:3000/api/auth/callback/credentials", { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body });
    const res = await handleAuth(request, { params: Promise.resolve({ nextauth: ["callback", "credentials"] }) });
    expect(res.status).toBe(503);
    const json = await res.json();
    expect(json).toMatchObject({ error: { code: "service_unavailable" }, request_id: expect.stringMatching(/^req_/) });
    expect(res.headers.get("retry-after")).toBeTruthy();
  });

  it("answers a valid provider webhook 503, so the provider retries, and stores it once the database is back", async () => {
    const bb = await startFakeBlueBubbles({ deliver: async () => {} });
    fakes.push(bb);
    await blueBubblesLine(bb);
    const message = bb.receive({ from: phone(), text: "during the outage", emit: false });
    const body = { type: "new-message", data: message };
    const url = new URL(bb.webhooks[0]!.url);
    forgetCachedLines();
    await breakDatabase();
    const res = await call("POST", url.pathname + url.search, { body });
    expect(res.status).toBe(503);
    expect(res.body.error.code).toBe("service_unavailable");
    expectRequestId(res);
    await restore();
    const retried = await call("POST", url.pathname + url.search, { body });
    expect(retried.status).toBe(200);
    expect(retried.body.received.stored).toBe(1);
  });

  it("/readyz says the database is unreachable; /healthz fails after DATABASE_FAILURE_EXIT_SECONDS and recovers with the database", async () => {
    await breakDatabase();
    const ready = await get("/readyz");
    expect(ready.status).toBe(503);
    expect(ready.body.checks.database).toMatchObject({ ok: false, error: expect.stringMatching(/^database unreachable: /) });
    expect(ready.body.checks.database.error).not.toMatch(/migration/);
    expect((await get("/healthz")).status).toBe(200); // failing for less than DATABASE_FAILURE_EXIT_SECONDS
    await new Promise((r) => setTimeout(r, 1_200));
    const health = await get("/healthz");
    expect(health.status).toBe(503);
    expect(health.body).toMatchObject({ status: "failing", database: { failing_for_seconds: expect.any(Number), error: expect.any(String) } });
    await restore();
    const again = await get("/healthz");
    expect(again.status).toBe(200);
    expect(again.body.status).toBe("ok");
  });
});

describe("an overloaded database", () => {
  it("answers 503 with Retry-After instead of 500 when a transaction cannot start in time", async () => {
    const f = await makeAccount();
    const fresh = await makeKey(f.accountId);
    overloadDatabase();
    for (const res of [await post("/api/simulator/messages", f.key, { line: f.line.handle, from: phone(), text: "busy" }), await get("/v1/chats", fresh)]) {
      expect(res.status).toBe(503);
      expect(res.body.error).toMatchObject({ code: "service_unavailable", message: expect.stringContaining("overloaded") });
      expect(res.headers.get("retry-after")).toBeTruthy();
      expectRequestId(res);
    }
  });
});

describe("a closed embedded database", () => {
  // Last in this file: it closes the file's own database for good.
  // PostgreSQL: covered by the dead port above.
  it.skipIf(!!process.env.DATABASE_URL)("answers 503 service_unavailable, not invalid_api_key, once PGlite is gone", async () => {
    const db = await holder.db!;
    const f = await makeAccount();
    const fresh = await makeKey(f.accountId);
    await db.pglite!.close();
    const res = await get("/v1/chats", fresh);
    expect(res.status).toBe(503);
    expect(res.body.error.code).toBe("service_unavailable");
    expectRequestId(res);
    const ready = await get("/readyz");
    expect(ready.body.checks.database.error).toMatch(/^database unreachable: /);
    holder.db = undefined; // nothing left to close
  });
});


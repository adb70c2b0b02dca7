import { afterAll, describe, expect, it } from "vitest";
import { GET as listen } from "@/app/v1/[[...path]]/route";
import { sql, sqlTransaction } from "@/server/db";
import { openStreams } from "@/server/services/webhooks/stream-slots";
import { fanOut } from "@/server/webhooks/fanout";
import { type FakeBlueBubbles, startFakeBlueBubbles } from "./fakes/bluebubbles";
import { blueBubblesLine, call, db, get, inbound, makeAccount, phone, post, runDelivery, type Fixture } from "./helpers";

// Batched writes at their limits: an account with thousands of subscribers (webhooks and
// listen sessions) and sends that fan out to all of them. One statement with more bind
// parameters than the wire protocol allows (65,535) broke embedded PGlite for good (every
// later query failed); every batched statement now stays under MAX_STATEMENT_PARAMS.

runDelivery();

const SUBSCRIBERS = 3_000;

const fakes: FakeBlueBubbles[] = [];
afterAll(async () => {
  await Promise.all(fakes.map((f) => f.close()));
});

/** Gives the line SUBSCRIBERS listen sessions (stream webhooks a connected client would read). */
async function subscribe(f: Pick<Fixture, "accountId" | "line">, count = SUBSCRIBERS): Promise<void> {
  await sql(
    `INSERT INTO "Webhook" (id, "accountId", "lineId", url, events, secret, kind, "lastSeenAt")
     SELECT 'wh_limit' || $3 || g, $1, $2, 'stream:lsn_limit' || $3 || g, ARRAY['message.sent', 'message.received'], 'whsec_x', 'stream', now()
     FROM generate_series(1, $4::int) AS g`,
    [f.accountId, f.line.id, f.accountId, count],
  );
}

async function waitFor(check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("batched writes at their limits", () => {
  it(`fans ${SUBSCRIBERS} subscribers × 25 events out in one transaction (300,000 parameters as one statement)`, async () => {
    const f = await makeAccount();
    await subscribe(f);
    const events = Array.from({ length: 25 }, (_, i) => ({ accountId: f.accountId, lineId: f.line.id, event: "message.received" as const, data: { n: i } }));
    expect(SUBSCRIBERS * events.length * 4).toBeGreaterThan(65_535 * 4);
    const written = await sqlTransaction((query) => fanOut(query, events));
    expect(written).toBe(SUBSCRIBERS * events.length);
    const [row] = await sql<{ n: number }>(`SELECT count(*)::int AS n FROM "WebhookDelivery" d JOIN "Webhook" w ON w.id = d."webhookId" WHERE w."accountId" = $1`, [f.accountId]);
    expect(row!.n).toBe(SUBSCRIBERS * events.length);
    // The database still answers.
    expect(await sql<{ ok: number }>(`SELECT 1 AS ok`)).toEqual([{ ok: 1 }]);
  }, 120_000);

  it(`concurrent sends to a line with ${SUBSCRIBERS} subscribers are all sent, each fanned out to every subscriber, and the API keeps answering`, async () => {
    const f = await makeAccount();
    const to = phone();
    await inbound(f, to, "hello"); // the contact wrote first: the line may answer
    await subscribe(f);
    const sends = await Promise.all(Array.from({ length: 20 }, (_, i) => post("/v1/messages", f.key, { from: f.line.handle, to, text: `burst ${i}` })));
    expect(sends.map((s) => s.status)).toEqual(sends.map(() => 200));
    const prisma = await db();
    const ids = sends.map((s) => s.body.id as string);
    await waitFor(async () => (await prisma.outboxItem.count({ where: { id: { in: ids }, status: "sent" } })) === ids.length, 90_000);
    const [row] = await sql<{ n: number }>(
      `SELECT count(*)::int AS n FROM "WebhookDelivery" d JOIN "Webhook" w ON w.id = d."webhookId" WHERE w."accountId" = $1 AND d.event = 'message.sent'`,
      [f.accountId],
    );
    expect(row!.n).toBe(SUBSCRIBERS * ids.length);
    expect((await get("/v1/lines", f.key)).status).toBe(200);
  }, 120_000);

  it("the fuzz run's trigger: 400 listen sessions opened and closed, then 150 concurrent sends; every send goes out and closed sessions get nothing", async () => {
    const f = await makeAccount();
    const to = phone();
    await inbound(f, to, "hello");
    for (let i = 0; i < 400; i++) {
      const abort = new AbortController();
      const res = await listen(new Request("http://localhost/v1/listen", { headers: { authorization: `Bearer ${f.key}` }, signal: abort.signal }));
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      await reader.read(); // the session event: the session exists
      abort.abort();
      await reader.cancel().catch(() => undefined);
      await waitFor(async () => openStreams(f.accountId) < 9, 10_000); // under MAX_STREAMS_PER_KEY (10)
    }
    const prisma = await db();
    await waitFor(async () => (await prisma.webhook.count({ where: { accountId: f.accountId, kind: "stream", isActive: true } })) === 0, 30_000);
    expect(await prisma.webhook.count({ where: { accountId: f.accountId, kind: "stream" } })).toBe(400);
    const sends = await Promise.all(Array.from({ length: 150 }, (_, i) => post("/v1/messages", f.key, { from: f.line.handle, to, text: `fuzz ${i}` })));
    expect(sends.map((s) => s.status)).toEqual(sends.map(() => 200));
    const ids = sends.map((s) => s.body.id as string);
    await waitFor(async () => (await prisma.outboxItem.count({ where: { id: { in: ids }, status: "sent" } })) === ids.length, 90_000);
    expect(await prisma.webhookDelivery.count({ where: { webhook: { accountId: f.accountId, kind: "stream" } } })).toBe(0);
    expect((await get("/v1/lines", f.key)).status).toBe(200);
  }, 180_000);

  it("500 concurrent provider webhooks (the inbound batch at its largest) on a line with 200 subscribers are all stored and announced", async () => {
    const bb = await startFakeBlueBubbles({ deliver: async () => {} });
    fakes.push(bb);
    const f = await blueBubblesLine(bb);
    await subscribe(f, 200);
    const url = new URL(bb.webhooks[0]!.url);
    const bodies = Array.from({ length: 500 }, (_, i) => ({ type: "new-message", data: bb.receive({ from: phone(), text: `burst ${i}`, emit: false }) }));
    const answers = await Promise.all(bodies.map((body) => call("POST", url.pathname + url.search, { body })));
    expect(answers.filter((a) => a.status !== 200).map((a) => a.status)).toEqual([]);
    expect(answers.reduce((n, a) => n + (a.body.received.stored as number), 0)).toBe(500);
    const [row] = await sql<{ n: number }>(
      `SELECT count(*)::int AS n FROM "WebhookDelivery" d JOIN "Webhook" w ON w.id = d."webhookId" WHERE w."accountId" = $1 AND d.event = 'message.received'`,
      [f.accountId],
    );
    expect(row!.n).toBe(500 * 200);
  }, 120_000);

  it("never sends a statement over the protocol's parameter limit, and the database keeps answering", async () => {
    const params = Array.from({ length: 70_000 }, (_, i) => i);
    const placeholders = params.map((_, i) => `$${i + 1}::int`).join(", ");
    await expect(sql(`SELECT 1 WHERE 0 IN (${placeholders})`, params)).rejects.toThrow(/bind parameters/);
    expect(await sql<{ ok: number }>(`SELECT 1 AS ok`)).toEqual([{ ok: 1 }]);
    expect((await get("/v1/lines", (await makeAccount()).key)).status).toBe(200);
  });
});

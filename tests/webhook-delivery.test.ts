import http from "node:http";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startRunner, stopRunner } from "@/server/engine/outbox-runner";
import { verifyWebhook } from "@/server/webhooks/signing";
import { startWebhookRunner, stopWebhookRunner } from "@/server/engine/webhook-runner";
import { fire } from "@/server/kernel/signals";
import { startChores, stopChores } from "@/server/engine/chores";
import { call, db, get, inbound, makeAccount, phone, post, type Fixture } from "./helpers";

// Events reach a real receiver on loopback: signed, once per delivery ID, retried on failure
// with every attempt logged.

interface Received {
  path: string;
  rawBody: string;
  headers: http.IncomingHttpHeaders;
  status: number;
}
const received: Received[] = [];
/** Status codes (and extra headers) to answer, per path, in order; 200 once they run out. */
const script = new Map<string, (number | { status: number; headers: Record<string, string> })[]>();
/** Reply bodies (bytes as latin1 strings) per path, in order; "ok" / "status N" once they run out. */
const replies = new Map<string, string[]>();
/** Paths whose receiver hangs: no answer until the delivery times out. */
const stalled = new Set<string>();
/** Paths whose receiver is down: 503 until removed. */
const down = new Set<string>();
const handler: http.RequestListener = (req, res) => {
  let rawBody = "";
  req.on("data", (c) => (rawBody += c));
  req.on("end", () => {
    if (stalled.has(req.url!)) return; // never answers
    const next = down.has(req.url!) ? 503 : (script.get(req.url!)?.shift() ?? 200);
    const { status, headers } = typeof next === "number" ? { status: next, headers: {} } : next;
    received.push({ path: req.url!, rawBody, headers: req.headers, status });
    const reply = replies.get(req.url!)?.shift();
    res.writeHead(status, { "content-type": "text/plain", ...headers }).end(reply !== undefined ? Buffer.from(reply, "latin1") : status === 200 ? "ok" : `status ${status}`);
  });
};
const receiver = http.createServer(handler);
/** Another receiving host (its own connections), for tests where two receivers must not share a pool. */
const otherReceiver = http.createServer(handler);
let base = "";
let otherBase = "";

beforeAll(async () => {
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(receiver.address() as { port: number }).port}`;
  await new Promise<void>((resolve) => otherReceiver.listen(0, "127.0.0.1", resolve));
  otherBase = `http://127.0.0.1:${(otherReceiver.address() as { port: number }).port}`;
  await startRunner();
  startWebhookRunner();
  startChores((chore) => chore.id !== "probe-due-lines"); // expired claims back to pending
});
afterAll(async () => {
  await stopChores();
  await stopWebhookRunner();
  await stopRunner();
  for (const server of [receiver, otherReceiver]) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

let hookNo = 0;
async function subscribe(f: Fixture, events: string[], host = base) {
  const path = `/hook-${++hookNo}`;
  const res = await post("/v1/webhooks", f.key, { from: f.line.handle, url: `${host}${path}`, events });
  expect(res.status).toBe(200);
  return { path, id: res.body.id as string, secret: res.body.secret as string };
}

const at = (path: string) => received.filter((r) => r.path === path);
const parsed = (r: Received, secret: string) => verifyWebhook(r.rawBody, r.headers as Record<string, string>, secret);

describe("webhook delivery", () => {
  it("delivers message.received and message.sent, signed, once each, only to subscribers", async () => {
    const f = await makeAccount();
    const hook = await subscribe(f, ["message.received", "message.sent"]);
    const reactionsOnly = await subscribe(f, ["reaction.added"]);
    const other = await makeAccount();
    const otherHook = await subscribe(other, ["message.received"]);
    const alice = phone();
    const m = await inbound(f, alice, "hello webhook");
    const sent = await post("/v1/messages", f.key, { from: f.line.handle, to: alice, text: "hello back" });
    await vi.waitFor(() => expect(at(hook.path)).toHaveLength(2), { timeout: 10_000, interval: 20 });

    const events = at(hook.path).map((r) => parsed(r, hook.secret));
    const byEvent = Object.fromEntries(events.map((e) => [e.event, e]));
    expect(byEvent["message.received"]!.data).toMatchObject({ id: m.id, text: "hello webhook", is_from_me: false, line_handle: f.line.handle });
    expect(byEvent["message.sent"]!.data).toMatchObject({ text: "hello back", is_from_me: true, outbox_id: sent.body.id, line_handle: f.line.handle });
    for (const r of at(hook.path)) {
      const body = JSON.parse(r.rawBody);
      expect(r.headers["x-webhook-delivery-id"]).toBe(body.delivery_id);
      expect(body.delivery_id).toMatch(/^dlv_/);
      expect(r.headers["x-webhook-timestamp"]).toBe(String(body.timestamp));
      expect(r.headers["webhook-id"]).toBe(body.delivery_id);
      expect(r.headers["content-type"]).toBe("application/json");
    }
    expect(() => parsed(at(hook.path)[0]!, "whsec_d3Jvbmc=")).toThrow();
    expect(at(reactionsOnly.path)).toEqual([]);
    expect(at(otherHook.path)).toEqual([]);
  });

  it("a receiver answering 500 twice then 200 gets the event once as a success, after two logged failures", async () => {
    const f = await makeAccount();
    const hook = await subscribe(f, ["message.received"]);
    script.set(hook.path, [500, 500]);
    await inbound(f, phone(), "try again");
    const prisma = await db();
    for (const n of [1, 2, 3]) {
      await vi.waitFor(() => expect(at(hook.path)).toHaveLength(n), { timeout: 10_000, interval: 20 });
      // The next attempt is scheduled 5 s, then 5 min later: bring it forward instead of waiting.
      await vi.waitFor(async () => expect((await prisma.webhookDelivery.findFirstOrThrow({ where: { webhookId: hook.id } })).status).not.toBe("delivering"));
      await prisma.webhookDelivery.updateMany({ where: { webhookId: hook.id, status: "pending" }, data: { nextAttemptAt: new Date() } });
      fire("webhooks.due");
    }
    const delivery = await prisma.webhookDelivery.findFirstOrThrow({ where: { webhookId: hook.id }, include: { attemptLog: { orderBy: { startedAt: "asc" } } } });
    expect(delivery).toMatchObject({ status: "succeeded", attempts: 3, lastStatusCode: 200 });
    expect(delivery.attemptLog.map((a) => [a.statusCode, a.responseBody])).toEqual([
      [500, "status 500"],
      [500, "status 500"],
      [200, "ok"],
    ]);
    const ids = at(hook.path).map((r) => JSON.parse(r.rawBody).delivery_id);
    expect(new Set(ids)).toEqual(new Set([delivery.id]));
    await new Promise((r) => setTimeout(r, 200));
    expect(at(hook.path)).toHaveLength(3);
  });

  it("410 Gone disables the webhook; message.failed reaches only webhooks that opted in", async () => {
    const f = await makeAccount();
    const gone = await subscribe(f, ["message.received"]);
    script.set(gone.path, [410]);
    const failures = await subscribe(f, ["message.failed"]);
    await inbound(f, "+15005550001", "unreachable contact");
    await vi.waitFor(async () => expect((await get("/v1/webhooks", f.key)).body.data.find((w: { id: string }) => w.id === gone.id)).toMatchObject({
      is_active: false,
      disabled_reason: "the endpoint answered 410 Gone",
    }), { timeout: 10_000, interval: 50 });

    const doomed = await post("/v1/messages", f.key, { from: f.line.handle, to: "+15005550001", text: "never arrives" });
    await vi.waitFor(() => expect(at(failures.path)).toHaveLength(1), { timeout: 10_000, interval: 20 });
    const event = parsed(at(failures.path)[0]!, failures.secret);
    expect(event).toMatchObject({
      event: "message.failed",
      data: { outbox_id: doomed.body.id, error: "recipient is not reachable on this service", line_handle: f.line.handle, to: "+15005550001" },
    });
    expect(at(gone.path)).toHaveLength(1);
  });
});

describe("retry schedule and disabling", () => {
  it("honours Retry-After on 503, ends the failing streak on success, and disables after 5 days of failure", async () => {
    const f = await makeAccount();
    const hook = await subscribe(f, ["message.received"]);
    script.set(hook.path, [{ status: 503, headers: { "retry-after": "120" } }]);
    const before = Date.now();
    await inbound(f, phone(), "busy receiver");
    const prisma = await db();
    const settledDelivery = async () => {
      let d = await prisma.webhookDelivery.findFirstOrThrow({ where: { webhookId: hook.id } });
      await vi.waitFor(async () => {
        d = await prisma.webhookDelivery.findFirstOrThrow({ where: { webhookId: hook.id } });
        expect(["pending", "succeeded", "failed"]).toContain(d.status);
        expect(d.attempts).toBeGreaterThan(0);
      }, { timeout: 10_000, interval: 20 });
      return d;
    };
    const first = await settledDelivery();
    // Retry-After (120 s) wins over the schedule's first wait (5 s ± 20%).
    expect(first).toMatchObject({ status: "pending", attempts: 1, lastStatusCode: 503 });
    expect(first.nextAttemptAt.getTime()).toBeGreaterThanOrEqual(before + 120_000);
    const failing = await prisma.webhook.findUniqueOrThrow({ where: { id: hook.id } });
    expect(failing.failingSince).not.toBeNull();
    expect(failing.isActive).toBe(true);

    // A success ends the streak.
    await post("/v1/webhooks/deliveries/resend", f.key, { id: first.id });
    await vi.waitFor(async () => expect((await prisma.webhookDelivery.findUniqueOrThrow({ where: { id: first.id } })).status).toBe("succeeded"), { timeout: 10_000, interval: 20 });
    expect((await prisma.webhook.findUniqueOrThrow({ where: { id: hook.id } })).failingSince).toBeNull();

    // Failing since more than 5 days: the next failure disables the webhook; it can be re-enabled.
    await prisma.webhook.update({ where: { id: hook.id }, data: { failingSince: new Date(Date.now() - 5 * 24 * 3_600_000 - 60_000) } });
    script.set(hook.path, [500]);
    await inbound(f, phone(), "still failing");
    const hookView = async () => (await get("/v1/webhooks", f.key)).body.data.find((w: { id: string }) => w.id === hook.id);
    await vi.waitFor(async () => expect(await hookView()).toMatchObject({ is_active: false, disabled_reason: "deliveries failed continuously for 5 days" }), {
      timeout: 10_000,
      interval: 50,
    });
    const enabled = await post("/v1/webhooks/enable", f.key, { id: hook.id });
    expect(enabled.body).toMatchObject({ id: hook.id, is_active: true });
    expect((await prisma.webhook.findUniqueOrThrow({ where: { id: hook.id } })).failingSince).toBeNull();
  });

  it("a delivery whose sender died mid-attempt is sent again with the same ID once its lease runs out", async () => {
    const f = await makeAccount();
    const hook = await subscribe(f, ["message.received"]);
    await inbound(f, phone(), "sent twice, same ID");
    await vi.waitFor(() => expect(at(hook.path)).toHaveLength(1), { timeout: 10_000, interval: 20 });
    const prisma = await db();
    const delivery = await prisma.webhookDelivery.findFirstOrThrow({ where: { webhookId: hook.id } });
    await vi.waitFor(async () => expect((await prisma.webhookDelivery.findUniqueOrThrow({ where: { id: delivery.id } })).status).toBe("succeeded"));
    // As a process that claimed it and died would leave it (its outcome never recorded).
    await prisma.webhookDelivery.update({ where: { id: delivery.id }, data: { status: "delivering", leaseExpiresAt: new Date(Date.now() - 1_000) } });
    await vi.waitFor(() => expect(at(hook.path)).toHaveLength(2), { timeout: 15_000, interval: 50 });
    expect(at(hook.path).map((r) => r.headers["x-webhook-delivery-id"])).toEqual([delivery.id, delivery.id]);
    await vi.waitFor(async () =>
      expect(await prisma.webhookDelivery.findUniqueOrThrow({ where: { id: delivery.id } })).toMatchObject({ status: "succeeded", attempts: 2 }),
    );
  }, 30_000);

  it("a stalled receiver holds at most its own share of the sender: other webhooks keep receiving", async () => {
    const slow = await makeAccount();
    const slowHook = await subscribe(slow, ["message.received"]);
    stalled.add(slowHook.path);
    const senders = Array.from({ length: 10 }, () => phone());
    for (let i = 0; i < 100; i += 10) await Promise.all(senders.map((who, j) => inbound(slow, who, `slow ${i + j}`)));
    const prisma = await db();
    // The stalled webhook has its maximum in flight; the rest wait for a slot.
    await vi.waitFor(async () => expect(await prisma.webhookDelivery.count({ where: { webhookId: slowHook.id, status: "delivering" } })).toBe(64), {
      timeout: 10_000,
      interval: 50,
    });
    const fast = await makeAccount();
    const fastHook = await subscribe(fast, ["message.received"], otherBase);
    await inbound(fast, phone(), "not held up");
    await vi.waitFor(() => expect(at(fastHook.path)).toHaveLength(1), { timeout: 5_000, interval: 20 });
    expect(await prisma.webhookDelivery.count({ where: { webhookId: slowHook.id, status: "delivering" } })).toBe(64);
    // Done with it: delete the webhook (its deliveries go with it) and release the connections.
    expect((await call("DELETE", "/v1/webhooks", { key: slow.key, body: { id: slowHook.id } })).body).toMatchObject({ deleted: true });
    stalled.delete(slowHook.path);
    receiver.closeAllConnections();
  });
});

describe("delivery log, resend, rotation, enable and disable", () => {
  it("lists deliveries with their attempts, resends failed ones and single ones with the same ID", async () => {
    const f = await makeAccount();
    const hook = await subscribe(f, ["message.received"]);
    script.set(hook.path, [503]);
    await inbound(f, phone(), "log me");
    await vi.waitFor(async () => {
      const list = await get(`/v1/webhooks/deliveries?webhook_id=${hook.id}`, f.key);
      expect(list.body.data).toEqual([
        expect.objectContaining({ webhook_id: hook.id, event: "message.received", status: "pending", attempts: 1, last_status_code: 503 }),
      ]);
    }, { timeout: 10_000, interval: 50 });
    const [summary] = (await get(`/v1/webhooks/deliveries?webhook_id=${hook.id}`, f.key)).body.data;
    expect(summary.next_attempt_at).toBeGreaterThan(Date.now());
    const detail = await get(`/v1/webhooks/deliveries?id=${summary.id}`, f.key);
    expect(detail.body).toMatchObject({ id: summary.id, data: { text: "log me" } });
    expect(detail.body.attempt_log).toEqual([
      { started_at: expect.any(Number), duration_ms: expect.any(Number), status_code: 503, response_excerpt: "status 503", error: null },
    ]);

    // Its retries ran out: resend every failed delivery since a time.
    const prisma = await db();
    await prisma.webhookDelivery.update({ where: { id: summary.id }, data: { status: "failed", completedAt: new Date() } });
    const resent = await post("/v1/webhooks/deliveries/resend", f.key, { webhook_id: hook.id, since: 0 });
    expect(resent.body).toMatchObject({ object: "resend", resent: 1 });
    await vi.waitFor(() => expect(at(hook.path)).toHaveLength(2), { timeout: 10_000, interval: 20 });
    await vi.waitFor(async () => expect((await get(`/v1/webhooks/deliveries?id=${summary.id}`, f.key)).body.status).toBe("succeeded"));
    expect((await post("/v1/webhooks/deliveries/resend", f.key, { id: summary.id })).body.resent).toBe(1);
    await vi.waitFor(() => expect(at(hook.path)).toHaveLength(3), { timeout: 10_000, interval: 20 });
    expect(new Set(at(hook.path).map((r) => JSON.parse(r.rawBody).delivery_id))).toEqual(new Set([summary.id]));

    const other = await makeAccount();
    expect((await get(`/v1/webhooks/deliveries?id=${summary.id}`, other.key)).body.error.code).toBe("delivery_not_found");
    expect((await post("/v1/webhooks/deliveries/resend", other.key, { id: summary.id })).body.error.code).toBe("delivery_not_found");
    expect((await get(`/v1/webhooks/deliveries?webhook_id=${hook.id}`, other.key)).body.error.code).toBe("webhook_not_found");
    expect((await get("/v1/webhooks/deliveries", f.key)).body.error).toMatchObject({ code: "missing_required_parameter", param: "webhook_id" });
  });

  it("rotating the secret signs with the new one and, for 24 hours, the old one too", async () => {
    const f = await makeAccount();
    const hook = await subscribe(f, ["message.received"]);
    const rotated = await post("/v1/webhooks/rotate-secret", f.key, { id: hook.id });
    expect(rotated.body).toMatchObject({ id: hook.id, secret: expect.stringMatching(/^whsec_/) });
    expect(rotated.body.secret).not.toBe(hook.secret);
    await inbound(f, phone(), "after rotation");
    await vi.waitFor(() => expect(at(hook.path)).toHaveLength(1), { timeout: 10_000, interval: 20 });
    const r = at(hook.path)[0]!;
    expect(parsed(r, rotated.body.secret).event).toBe("message.received");
    expect(String(r.headers["webhook-signature"]).split(" ")).toHaveLength(2);
    expect(r.headers["x-webhook-signature-previous"]).toMatch(/^[0-9a-f]{64}$/);
  });

  it("a disabled webhook records nothing; enabling it resumes deliveries", async () => {
    const f = await makeAccount();
    const hook = await subscribe(f, ["message.received"]);
    expect((await post("/v1/webhooks/disable", f.key, { id: hook.id })).body).toMatchObject({ is_active: false, disabled_reason: "disabled by the owner" });
    await inbound(f, phone(), "while disabled");
    expect((await get(`/v1/webhooks/deliveries?webhook_id=${hook.id}`, f.key)).body.data).toEqual([]);
    expect((await post("/v1/webhooks/enable", f.key, { id: hook.id })).body).toMatchObject({ is_active: true, disabled_reason: null });
    await inbound(f, phone(), "enabled again");
    await vi.waitFor(() => expect(at(hook.path)).toHaveLength(1), { timeout: 10_000, interval: 20 });
    expect(JSON.parse(at(hook.path)[0]!.rawBody).data.text).toBe("enabled again");
    const other = await makeAccount();
    expect((await post("/v1/webhooks/enable", other.key, { id: hook.id })).body.error.code).toBe("webhook_not_found");
  });

  it("a receiver that is down while 1,000 events happen receives all 1,000 once it is back, each once as a success", async () => {
    const f = await makeAccount();
    const hook = await subscribe(f, ["message.received"]);
    down.add(hook.path);
    const senders = Array.from({ length: 20 }, () => phone());
    for (let i = 0; i < 1_000; i += 20) {
      await Promise.all(senders.map((who, j) => inbound(f, who, `event ${i + j}`)));
    }
    const prisma = await db();
    await vi.waitFor(
      async () => expect(await prisma.webhookDelivery.count({ where: { webhookId: hook.id, status: "pending", attempts: { gte: 1 } } })).toBe(1_000),
      { timeout: 60_000, interval: 200 },
    );
    // Back up: the owner's resend of everything failing brings the retries forward to now.
    down.delete(hook.path);
    // (A scheduled retry running at this moment is not counted: it is already under way.)
    const { resent } = (await post("/v1/webhooks/deliveries/resend", f.key, { webhook_id: hook.id, since: 0 })).body;
    expect(resent).toBeGreaterThan(900);
    await vi.waitFor(
      async () => expect(await prisma.webhookDelivery.count({ where: { webhookId: hook.id, status: "succeeded" } })).toBe(1_000),
      { timeout: 60_000, interval: 200 },
    );
    const successes = at(hook.path).filter((r) => r.status === 200);
    expect(successes).toHaveLength(1_000);
    expect(new Set(successes.map((r) => r.headers["x-webhook-delivery-id"])).size).toBe(1_000);
    expect(new Set(successes.map((r) => JSON.parse(r.rawBody).data.text)).size).toBe(1_000);
  }, 180_000);

  it("a reply with NUL bytes is logged (NUL as U+FFFD) and retried on the schedule, not every few seconds unlogged", async () => {
    const f = await makeAccount();
    const hook = await subscribe(f, ["message.received"]);
    script.set(hook.path, [500, 200]);
    replies.set(hook.path, ["bad\0reply\0", "ok\0"]);
    await inbound(f, phone(), "nul reply");
    await vi.waitFor(() => expect(at(hook.path)).toHaveLength(1), { timeout: 10_000, interval: 20 });
    const prisma = await db();
    const { id } = await prisma.webhookDelivery.findFirstOrThrow({ where: { webhookId: hook.id } });
    const detail = async () => (await get(`/v1/webhooks/deliveries?id=${id}`, f.key)).body;
    await vi.waitFor(async () => expect((await detail()).attempt_log).toHaveLength(1), { timeout: 5_000, interval: 50 });
    const first = await detail();
    expect(first).toMatchObject({ status: "pending", attempts: 1, last_status_code: 500 });
    expect(first.attempt_log[0]).toMatchObject({ status_code: 500, response_excerpt: "bad\uFFFDreply\uFFFD" });
    // The first retry is 5 s (±20%) later.
    expect(first.next_attempt_at - first.attempt_log[0].started_at).toBeGreaterThanOrEqual(3_900);
    await prisma.webhookDelivery.update({ where: { id }, data: { nextAttemptAt: new Date() } });
    fire("webhooks.due");
    await vi.waitFor(async () => expect((await detail()).status).toBe("succeeded"), { timeout: 10_000, interval: 50 });
    const done = await detail();
    expect(done.attempt_log.map((a: { status_code: number; response_excerpt: string }) => [a.status_code, a.response_excerpt])).toEqual([
      [500, "bad\uFFFDreply\uFFFD"],
      [200, "ok\uFFFD"],
    ]);
    expect(at(hook.path)).toHaveLength(2);
  });

  it("an attempt the database refuses to record still counts: logged without the reply, retried on the schedule", async () => {
    const f = await makeAccount();
    const hook = await subscribe(f, ["message.received"]);
    const prisma = await db();
    // Whatever else the database might refuse in a reply, stood for by a trigger.
    await prisma.$executeRawUnsafe(`CREATE OR REPLACE FUNCTION refuse_reply() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW."responseBody" LIKE '%refuse-me%' THEN RAISE EXCEPTION 'refused'; END IF; RETURN NEW; END $$`);
    await prisma.$executeRawUnsafe(`CREATE TRIGGER refuse_reply BEFORE INSERT ON "WebhookAttempt" FOR EACH ROW EXECUTE FUNCTION refuse_reply()`);
    try {
      script.set(hook.path, [503]);
      replies.set(hook.path, ["refuse-me"]);
      await inbound(f, phone(), "unrecordable");
      await vi.waitFor(() => expect(at(hook.path)).toHaveLength(1), { timeout: 10_000, interval: 20 });
      const { id } = await prisma.webhookDelivery.findFirstOrThrow({ where: { webhookId: hook.id } });
      const detail = async () => (await get(`/v1/webhooks/deliveries?id=${id}`, f.key)).body;
      await vi.waitFor(async () => expect((await detail()).attempt_log).toHaveLength(1), { timeout: 5_000, interval: 50 });
      const d = await detail();
      expect(d).toMatchObject({ status: "pending", attempts: 1, last_status_code: 503, last_error: "the attempt could not be recorded (HTTP 503)" });
      expect(d.attempt_log[0]).toMatchObject({ status_code: 503, response_excerpt: null, error: "the attempt could not be recorded (HTTP 503)" });
      expect(d.next_attempt_at - Date.now()).toBeGreaterThan(2_000);
      expect((await prisma.webhook.findUniqueOrThrow({ where: { id: hook.id } })).failingSince).not.toBeNull();
      await new Promise((r) => setTimeout(r, 1_500));
      expect(at(hook.path)).toHaveLength(1);
    } finally {
      await prisma.$executeRawUnsafe(`DROP TRIGGER refuse_reply ON "WebhookAttempt"`);
    }
  });
});

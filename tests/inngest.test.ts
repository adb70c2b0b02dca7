import http from "node:http";
import { InngestTestEngine } from "@inngest/test";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";

// The Inngest engine: writes send an event to Inngest (here a stand-in for its event API on
// loopback), and the functions in inngest/functions deliver with the same steps as the
// embedded runner, run for real against the database by @inngest/test.
const eventApiPort = vi.hoisted(() => {
  const port = 20_000 + (process.pid % 20_000);
  process.env.INNGEST_DEV = "1";
  process.env.INNGEST_BASE_URL = `http://127.0.0.1:${port}`;
  return port;
});

import { createDeliverOutboxItem } from "@/inngest/functions/deliver-outbox-item";
import { createDeliverWebhooks } from "@/inngest/functions/deliver-webhooks";
import { createRunChores, OVERDUE_MS } from "@/inngest/functions/run-chores";
import { startFakeBlueBubbles } from "./fakes/bluebubbles";
import { verifyWebhook } from "@/server/webhooks/signing";
import { inngest } from "@/inngest/inngest-client";
import { config } from "@/server/kernel/config";
import { startEngine, stopEngine } from "@/server/engine";
import { inngestAnnouncer } from "@/inngest/announcer";
import { blueBubblesLine, call, db, get, inbound, makeAccount, makeKey, phone, post, type Fixture } from "./helpers";

const q = encodeURIComponent;
const received: { name: string; data: { id?: string; line_id?: string } }[] = [];
let eventApiUp = true;
const eventApi = http.createServer((req, res) => {
  let body = "";
  req.on("data", (c) => (body += c));
  req.on("end", () => {
    if (!eventApiUp) {
      res.writeHead(503).end();
      return;
    }
    const events = JSON.parse(body) as typeof received;
    received.push(...events);
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ ids: events.map((_, i) => `evt${i}`), status: 200 }));
  });
});
beforeAll(async () => {
  await new Promise<void>((resolve) => eventApi.listen(eventApiPort, "127.0.0.1", resolve));
  await startEngine({ announcer: inngestAnnouncer }); // under Inngest: announces committed work
});
afterAll(async () => {
  await stopEngine(1_000);
  await new Promise<void>((resolve) => eventApi.close(() => resolve()));
});

const deliver = () => createDeliverOutboxItem(inngest);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Sleeps between rounds really wait (the item is not due before), for at most the backoff. */
const backoffs = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `backoff-${i + 1}`, handler: () => sleep(1_300) }));

async function queued(f: Fixture, to: string, text = "hello") {
  const res = await post("/v1/messages", f.key, { from: f.line.handle, to, text });
  expect(res.status).toBe(200);
  return { id: res.body.id as string, line_id: f.line.id };
}

const run = (data: { id: string; line_id: string }, steps: { id: string; handler: () => unknown }[] = []) =>
  new InngestTestEngine({ function: deliver(), events: [{ name: "relay/outbox.item.created", data }], steps }).execute();

describe("Inngest engine", () => {
  it("is chosen by INNGEST_DEV / INNGEST_EVENT_KEY, and a write sends one event per item", async () => {
    expect(config().deliveryEngine).toBe("inngest");
    const f = await makeAccount();
    const alice = phone();
    await inbound(f, alice, "hi");
    const item = await queued(f, alice);
    await vi.waitFor(() => expect(received).toContainEqual(expect.objectContaining({ name: "relay/outbox.item.created", data: item })));
  });

  it("delivers an item: claim, send, record; the message is visible and a duplicate event sends nothing", async () => {
    const f = await makeAccount();
    const alice = phone();
    await inbound(f, alice, "hi");
    const item = await queued(f, alice, "via inngest");
    const { result, ctx } = await run(item);
    expect(result).toEqual({ id: item.id, status: "sent", rounds: 1 });
    expect(ctx.step.run.mock.calls.map((c) => c[0])).toEqual(["claim-1", "send-1", "record-1"]);
    expect((await get(`/v1/outbox?id=${item.id}`, f.key)).body).toMatchObject({ status: "sent", attempts: 1 });
    const messages = await get(`/v1/messages?from=${q(f.line.handle)}&to=${q(alice)}`, f.key);
    expect(messages.body.data[0]).toMatchObject({ text: "via inngest", is_from_me: true, outbox_id: item.id });

    const again = await run(item);
    expect(again.result).toEqual({ id: item.id, status: "skipped", rounds: 1 });
    expect(await (await db()).message.count({ where: { outboxId: item.id } })).toBe(1);
  });

  it("retries transient failures after sleeping until the item is due, and fails permanent ones", async () => {
    const f = await makeAccount();
    await inbound(f, "+15005550002", "flaky");
    await inbound(f, "+15005550001", "unreachable");
    const flaky = await queued(f, "+15005550002");
    const { result, ctx } = await run(flaky, backoffs(2));
    expect(result).toEqual({ id: flaky.id, status: "sent", rounds: 3 });
    expect(ctx.step.sleepUntil.mock.calls.map((c) => c[0])).toEqual(["backoff-1", "backoff-2"]);
    expect((await get(`/v1/outbox?id=${flaky.id}`, f.key)).body).toMatchObject({ status: "sent", attempts: 3 });

    const doomed = await queued(f, "+15005550001");
    expect((await run(doomed)).result).toEqual({ id: doomed.id, status: "failed", rounds: 1 });
    expect((await get(`/v1/outbox?id=${doomed.id}`, f.key)).body).toMatchObject({
      status: "failed",
      error: "recipient is not reachable on this service",
    });
  }, 20_000);

  it("honours holds: a near scheduled send waits for its time, a far one is left to the sweep, a canceled one never goes", async () => {
    const f = await makeAccount();
    const alice = phone();
    await inbound(f, alice, "hi");
    const sendAt = Date.now() + 1_200;
    const near = await post("/v1/messages", f.key, { from: f.line.handle, to: alice, text: "soon", send_at: sendAt });
    const waits = [{ id: "wait-1", handler: () => sleep(Math.max(0, sendAt - Date.now() + 50)) }];
    const { result, ctx } = await run({ id: near.body.id, line_id: f.line.id }, waits);
    expect(result).toEqual({ id: near.body.id, status: "sent", rounds: 2 });
    const [, until] = ctx.step.sleepUntil.mock.calls[0]! as [string, string];
    expect(new Date(until).getTime()).toBeGreaterThanOrEqual(sendAt);
    const sent = (await get(`/v1/outbox?id=${near.body.id}`, f.key)).body;
    expect(sent.completed_at).toBeGreaterThanOrEqual(sendAt);

    // A day ahead: no run waits a day; the sweep wakes the item when it comes close.
    const far = await post("/v1/messages", f.key, { from: f.line.handle, to: alice, text: "tomorrow", send_at: Date.now() + 86_400_000 });
    expect((await run({ id: far.body.id, line_id: f.line.id })).result).toEqual({ id: far.body.id, status: "skipped", rounds: 1 });
    await (await db()).outboxItem.update({ where: { id: far.body.id }, data: { availableAt: new Date(Date.now() + 30_000) } });
    const sweep = new InngestTestEngine({ function: createRunChores(inngest), steps: [{ id: "wake-held", handler: () => ({ ids: [] }) }] });
    expect((await sweep.execute()).result).toMatchObject({ woken: expect.arrayContaining([far.body.id]) });

    // Canceled while its run waits: the run wakes to nothing.
    const doomedAt = Date.now() + 800;
    const doomed = await post("/v1/messages", f.key, { from: f.line.handle, to: alice, text: "never", send_at: doomedAt });
    const cancelThenWait = [
      {
        id: "wait-1",
        handler: async () => {
          expect((await call("DELETE", `/v1/outbox?id=${doomed.body.id}`, { key: f.key })).status).toBe(200);
          await sleep(Math.max(0, doomedAt - Date.now() + 50));
        },
      },
    ];
    expect((await run({ id: doomed.body.id, line_id: f.line.id }, cancelThenWait)).result).toEqual({ id: doomed.body.id, status: "skipped", rounds: 2 });
    expect(await (await db()).message.count({ where: { outboxId: doomed.body.id } })).toBe(0);
  }, 20_000);

  it("a send waiting for approval: its run skips it and sends no event until the owner approves; approval announces it and it goes", async () => {
    const f = await makeAccount();
    const alice = phone();
    await inbound(f, alice, "hi");
    const agent = await makeKey(f.accountId, { guardrails: { require_approval: true } });
    const before = received.length;
    const held = await post("/v1/messages", agent, { from: f.line.handle, to: alice, text: "approve me" });
    await sleep(300);
    expect(received.slice(before).map((e) => e.data.id)).not.toContain(held.body.id);
    const data = { id: held.body.id as string, line_id: f.line.id };
    expect((await run(data)).result).toEqual({ id: held.body.id, status: "skipped", rounds: 1 });
    expect((await post(`/v1/outbox/approve?id=${held.body.id}`, f.key)).status).toBe(200);
    await vi.waitFor(() => expect(received.slice(before).map((e) => e.data.id)).toContain(held.body.id));
    expect((await run(data)).result).toEqual({ id: held.body.id, status: "sent", rounds: 1 });
  });

  it("runs the line's policy at its claim: inside quiet hours the item is held again, not sent", async () => {
    const f = await makeAccount();
    const { setLinePolicy } = await import("@/server/services/lines/set-line-policy");
    const hhmm = (d: Date) => `${String(d.getUTCHours()).padStart(2, "0")}:${String(d.getUTCMinutes()).padStart(2, "0")}`;
    await setLinePolicy(null, f.line.id, {
      contact_first: false,
      quiet_hours: { start: hhmm(new Date(Date.now() - 3_600_000)), end: hhmm(new Date(Date.now() + 3_600_000)), timezone: "UTC" },
    });
    const item = await queued(f, phone(), "too late at night");
    expect((await run(item)).result).toEqual({ id: item.id, status: "skipped", rounds: 1 });
    expect((await get(`/v1/outbox?id=${item.id}`, f.key)).body).toMatchObject({ status: "pending", hold_reason: "quiet_hours", attempts: 0 });
  });

  it("a write succeeds while Inngest is unreachable; the sweep returns expired claims and re-sends lost events", async () => {
    const f = await makeAccount();
    const alice = phone();
    await inbound(f, alice, "hi");
    eventApiUp = false;
    const lost = await queued(f, alice, "event lost");
    eventApiUp = true;
    const stuck = await queued(f, alice, "worker died");
    const prisma = await db();
    const past = new Date(Date.now() - OVERDUE_MS - 5_000);
    await prisma.outboxItem.update({ where: { id: lost.id }, data: { availableAt: past } });
    await prisma.outboxItem.update({
      where: { id: stuck.id },
      data: { status: "claimed", claimedBy: "inngest:dead-run", leaseExpiresAt: past, availableAt: past, attempts: 1 },
    });

    const sweep = new InngestTestEngine({ function: createRunChores(inngest), steps: [{ id: "redeliver", handler: () => ({ ids: [] }) }] });
    const { result, ctx } = await sweep.execute();
    expect((result as { chores: Record<string, number> }).chores["release-expired-outbox-leases"]).toBeGreaterThanOrEqual(1);
    expect((result as { redelivered: string[] }).redelivered).toEqual(expect.arrayContaining([lost.id, stuck.id]));
    const sent = ctx.step.sendEvent.mock.calls[0]![1] as { name: string; data: { id: string } }[];
    expect(sent.map((e) => e.data.id)).toEqual(expect.arrayContaining([lost.id, stuck.id]));

    for (const item of [lost, stuck]) expect((await run(item)).result).toMatchObject({ status: "sent" });
    expect(await prisma.message.count({ where: { outboxId: { in: [lost.id, stuck.id] } } })).toBe(2);
  });

  it("webhook deliveries: a change announces relay/webhooks.due and deliver-webhooks sends them, signed", async () => {
    const hits: { rawBody: string; headers: http.IncomingHttpHeaders }[] = [];
    let status = 200;
    const hookReceiver = http.createServer((req, res) => {
      let rawBody = "";
      req.on("data", (c) => (rawBody += c));
      req.on("end", () => {
        hits.push({ rawBody, headers: req.headers });
        res.writeHead(status).end("ok");
      });
    });
    await new Promise<void>((resolve) => hookReceiver.listen(0, "127.0.0.1", resolve));
    try {
      const f = await makeAccount();
      const url = `http://127.0.0.1:${(hookReceiver.address() as { port: number }).port}/in`;
      const hook = await post("/v1/webhooks", f.key, { from: f.line.handle, url, events: ["message.received"] });
      const before = received.length;
      const m = await inbound(f, phone(), "through inngest");
      await vi.waitFor(() => expect(received.slice(before).map((e) => e.name)).toContain("relay/webhooks.due"));
      expect(hits).toEqual([]); // no embedded sender under this engine

      const { result } = await new InngestTestEngine({
        function: createDeliverWebhooks(inngest),
        events: [{ name: "relay/webhooks.due", data: {} }],
      }).execute();
      expect(result).toMatchObject({ sent: 1 });
      expect(hits).toHaveLength(1);
      const event = verifyWebhook(hits[0]!.rawBody, hits[0]!.headers as Record<string, string>, hook.body.secret);
      expect(event).toMatchObject({ event: "message.received", data: { id: m.id, text: "through inngest" } });

      // A failed attempt's 5 s retry is not left to the every-minute cron: the run sleeps until
      // it is due and announces it.
      status = 500;
      const before500 = Date.now();
      await inbound(f, phone(), "retry soon");
      const slept = vi.fn();
      const announced = vi.fn(() => ({ ids: ["evt"] }));
      const second = await new InngestTestEngine({
        function: createDeliverWebhooks(inngest),
        events: [{ name: "relay/webhooks.due", data: {} }],
        steps: [
          { id: "wait-for-retry", handler: slept },
          { id: "retry-due", handler: announced },
        ],
      }).execute();
      const retryAt = (second.result as { retryAt: number }).retryAt;
      expect(retryAt).toBeGreaterThanOrEqual(before500 + 4_000);
      expect(retryAt).toBeLessThan(Date.now() + 6_000 + 1_000);
      expect(slept).toHaveBeenCalledTimes(1);
      expect(announced).toHaveBeenCalledTimes(1);
    } finally {
      await new Promise<void>((resolve) => hookReceiver.close(() => resolve()));
    }
  });

  it("provider lines run the same steps: one item at a time in order (a later item waits), sent through BlueBubbles; probe-lines probes them", async () => {
    const bb = await startFakeBlueBubbles({
      deliver: (url, body) =>
        call("POST", new URL(url).pathname + new URL(url).search, { body }).then(() => undefined),
    });
    try {
      const f = await blueBubblesLine(bb);
      const { line } = f;
      const alice = phone();
      bb.receive({ from: alice, text: "hi" });
      await bb.idle();
      const first = await post("/v1/messages", f.key, { from: line.handle, to: alice, text: "one" });
      const second = await post("/v1/messages", f.key, { from: line.handle, to: alice, text: "two" });
      const item1 = { id: first.body.id as string, line_id: line.id };
      const item2 = { id: second.body.id as string, line_id: line.id };

      // The second item's run meets the first still pending: it waits (a sleep step) instead of
      // claiming; while it waits, the first item's own run sends it; then the second goes.
      let firstRun: unknown;
      const { result } = await new InngestTestEngine({
        function: deliver(),
        events: [{ name: "relay/outbox.item.created", data: item2 }],
        steps: [{ id: "wait-1", handler: async () => void (firstRun = (await run(item1)).result) }],
      }).execute();
      expect(firstRun).toEqual({ id: item1.id, status: "sent", rounds: 1 });
      expect(result).toEqual({ id: item2.id, status: "sent", rounds: 2 });
      expect(bb.messages.filter((m) => m.isFromMe).map((m) => m.text)).toEqual(["one", "two"]);
      expect(bb.requests.filter((r) => r.path === "/api/v1/message/text").map((r) => (r.body as { tempGuid: string }).tempGuid)).toEqual([item1.id, item2.id]);

      await (await db()).line.update({ where: { id: line.id }, data: { lastProbeAt: null, status: "degraded", failures: 1 } });
      const chores = await new InngestTestEngine({ function: createRunChores(inngest), steps: [{ id: "redeliver", handler: () => ({ ids: [] }) }] }).execute();
      expect((chores.result as { chores: Record<string, number> }).chores["probe-due-lines"]).toBeGreaterThanOrEqual(1);
      expect(await (await db()).line.findUniqueOrThrow({ where: { id: line.id } })).toMatchObject({ status: "connected", failures: 0 });
    } finally {
      await bb.close();
    }
  });
});

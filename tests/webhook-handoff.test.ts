import http from "node:http";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { startWebhookRunner, stopWebhookRunner } from "@/server/engine/webhook-runner";
import { releaseExpiredDeliveries } from "@/server/webhooks/delivery";
import { type HandedDelivery, type LocalSender, setLocalSender } from "@/server/webhooks/handoff";
import { verifyWebhook } from "@/server/webhooks/signing";
import { unitOfWork } from "@/server/write/unit";
import { db, get, inbound, makeAccount, phone, post, type Fixture } from "./helpers";

// The deliveries a server's own changes write go to its sender as the change commits, stored
// claimed: sent once, nothing read back, and never lost if the process dies before sending.

const received: { path: string; rawBody: string; headers: http.IncomingHttpHeaders }[] = [];
const receiver = http.createServer((req, res) => {
  let rawBody = "";
  req.on("data", (c) => (rawBody += c));
  req.on("end", () => {
    received.push({ path: req.url!, rawBody, headers: req.headers });
    res.writeHead(200).end("ok");
  });
});
let base = "";

beforeAll(async () => {
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(receiver.address() as { port: number }).port}`;
});
afterEach(async () => {
  await stopWebhookRunner();
  setLocalSender(null);
});
afterAll(async () => {
  receiver.closeAllConnections();
  await new Promise<void>((resolve) => receiver.close(() => resolve()));
});

let hookNo = 0;
async function subscribe(f: Fixture) {
  const path = `/handoff-${++hookNo}`;
  const res = await post("/v1/webhooks", f.key, { from: f.line.handle, url: `${base}${path}`, events: ["message.received"] });
  return { path, id: res.body.id as string, secret: res.body.secret as string };
}
const at = (path: string) => received.filter((r) => r.path === path);

/** A sender that takes slots and is handed deliveries, but never sends: a process that dies right after its commit. */
function deadSender() {
  const calls = { reserved: 0, unreserved: 0, taken: [] as HandedDelivery[] };
  const sender: LocalSender = {
    reserve: () => (calls.reserved++, true),
    unreserve: (d) => void (calls.unreserved += d.length),
    take: (d) => void calls.taken.push(...d),
  };
  setLocalSender(sender);
  return calls;
}

describe("handing a server's own deliveries to its sender", () => {
  it("sends the event at once as attempt 1, in the documented body, signed, recorded once", async () => {
    startWebhookRunner();
    const f = await makeAccount();
    const hook = await subscribe(f);
    const alice = phone();
    const m = await inbound(f, alice, "straight through");
    await vi.waitFor(() => expect(at(hook.path)).toHaveLength(1), { timeout: 10_000, interval: 10 });
    const [r] = at(hook.path);
    const event = verifyWebhook(r!.rawBody, r!.headers as Record<string, string>, hook.secret);
    const message = (await get(`/v1/messages?id=${m.id}`, f.key)).body;
    const { request_id: _, ...wire } = message;
    expect(JSON.parse(r!.rawBody)).toEqual({ event: "message.received", data: { ...wire, line_handle: f.line.handle }, timestamp: expect.any(Number), delivery_id: expect.stringMatching(/^dlv_/) });
    expect(event.event).toBe("message.received");
    const prisma = await db();
    await vi.waitFor(async () =>
      expect(await prisma.webhookDelivery.findUniqueOrThrow({ where: { id: JSON.parse(r!.rawBody).delivery_id }, include: { attemptLog: true } })).toMatchObject({
        status: "succeeded",
        attempts: 1,
        leaseExpiresAt: null,
        attemptLog: [expect.objectContaining({ statusCode: 200 })],
      }),
    );
  });

  it("a process that dies after its commit loses nothing: the lease runs out and a sender delivers it with the same ID", async () => {
    const f = await makeAccount();
    const hook = await subscribe(f);
    const calls = deadSender();
    await inbound(f, phone(), "the sender died");
    expect(calls.taken).toHaveLength(1);
    const prisma = await db();
    const stored = await prisma.webhookDelivery.findUniqueOrThrow({ where: { id: calls.taken[0]!.id } });
    expect(stored).toMatchObject({ status: "delivering", attempts: 1 });
    expect(stored.leaseExpiresAt!.getTime()).toBeGreaterThan(Date.now() + 20_000);
    expect(at(hook.path)).toEqual([]);

    setLocalSender(null);
    expect(await releaseExpiredDeliveries(new Date(stored.leaseExpiresAt!.getTime() + 1))).toBeGreaterThanOrEqual(1);
    startWebhookRunner();
    await vi.waitFor(() => expect(at(hook.path)).toHaveLength(1), { timeout: 10_000, interval: 10 });
    expect(at(hook.path)[0]!.headers["x-webhook-delivery-id"]).toBe(stored.id);
    await vi.waitFor(async () => expect(await prisma.webhookDelivery.findUniqueOrThrow({ where: { id: stored.id } })).toMatchObject({ status: "succeeded", attempts: 2 }));
  });

  it("a change that rolls back stores no delivery and gives its sender slots back", async () => {
    const f = await makeAccount();
    await subscribe(f);
    const calls = deadSender();
    const failure = unitOfWork(async (unit) => {
      await unit.fanOut([{ accountId: f.accountId, lineId: f.line.id, event: "message.received", data: { id: "msg_rolled_back" } }]);
      throw new Error("the change fails after its fan-out");
    });
    await expect(failure).rejects.toThrow("the change fails");
    expect(calls).toMatchObject({ reserved: 1, unreserved: 1, taken: [] });
    const prisma = await db();
    expect(await prisma.webhookDelivery.count({ where: { webhook: { accountId: f.accountId } } })).toBe(0);
  });
});

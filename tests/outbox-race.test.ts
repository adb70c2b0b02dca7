import { describe, expect, it } from "vitest";
import { startRunner, stopRunner } from "@/server/engine/outbox-runner";
import { call, db, get, inbound, makeAccount, makeKey, phone, post, runDelivery, type ApiResult } from "./helpers";

// The decisions on a send held for approval (docs/agents.md#approval): the owner's approve and
// reject and a cancel (the agent's or the owner's) racing on one item over HTTP. Each is one
// conditional UPDATE of the row, so exactly one wins whatever the mix, on PGlite and on
// PostgreSQL; the others answer 409 with their endpoint's code.

runDelivery();

const ROUNDS = 20;

type Decision = "approve" | "reject" | "cancel";

/** What each decision leaves when it wins: the item as the database holds it. */
const WON: Record<Decision, (row: { status: string; error: string | null; reviewedAt: Date | null; canceledAt: Date | null }) => void> = {
  approve: (row) => {
    expect(["pending", "claimed", "sent"]).toContain(row.status);
    expect(row).toMatchObject({ error: null, canceledAt: null, reviewedAt: expect.any(Date) });
  },
  reject: (row) => expect(row).toMatchObject({ status: "failed", error: "rejected", canceledAt: null }),
  cancel: (row) => expect(row).toMatchObject({ status: "failed", error: "canceled", reviewedAt: null, canceledAt: expect.any(Date) }),
};

const ORDERS: Decision[][] = [
  ["approve", "reject", "cancel"],
  ["cancel", "approve", "reject"],
  ["reject", "cancel", "approve"],
  ["approve", "cancel", "reject"],
  ["cancel", "reject", "approve"],
  ["reject", "approve", "cancel"],
];

const LOST: Record<Decision, string> = { approve: "outbox_item_not_reviewable", reject: "outbox_item_not_reviewable", cancel: "outbox_item_not_cancelable" };

describe("approve, reject and cancel racing on one held send", () => {
  it(`exactly one wins in each of ${ROUNDS} rounds; the others answer 409`, async () => {
    const f = await makeAccount();
    const alice = phone();
    await inbound(f, alice);
    const agent = await makeKey(f.accountId, { guardrails: { require_approval: true } });
    for (let round = 0; round < ROUNDS; round++) {
      const held = await post("/v1/messages", agent, { from: f.line.handle, to: alice, text: `round ${round}` });
      const id: string = held.body.id;
      expect((await get(`/v1/outbox?id=${id}`, agent)).body).toMatchObject({ status: "pending", hold_reason: "approval" });
      // The agent cancels its own send in even rounds, the owner in odd ones.
      const canceler = round % 2 === 0 ? agent : f.key;
      const request: Record<Decision, () => Promise<ApiResult>> = {
        approve: () => post(`/v1/outbox/approve?id=${id}`, f.key),
        reject: () => post(`/v1/outbox/reject?id=${id}`, f.key),
        cancel: () => call("DELETE", `/v1/outbox?id=${id}`, { key: canceler }),
      };
      // Each round starts them in another order: one connection (PGlite) mostly serves the first.
      const order = ORDERS[round % ORDERS.length]!;
      const results = Object.fromEntries(await Promise.all(order.map(async (d) => [d, await request[d]()] as const))) as Record<Decision, ApiResult>;
      const winners = (Object.keys(results) as Decision[]).filter((d) => results[d].status === 200);
      expect(winners, `round ${round}: ${JSON.stringify(Object.fromEntries(Object.entries(results).map(([d, r]) => [d, r.status])))}`).toHaveLength(1);
      const winner = winners[0]!;
      for (const d of Object.keys(results) as Decision[]) {
        if (d === winner) continue;
        expect(results[d].status).toBe(409);
        expect(results[d].body).toMatchObject({ error: { code: LOST[d], param: "id" }, request_id: expect.stringMatching(/^req_/) });
      }
      WON[winner](await (await db()).outboxItem.findUniqueOrThrow({ where: { id } }));
    }
  });

  it("an approved send that goes now can no longer be canceled; an approved one that waits for its send_at can", async () => {
    const f = await makeAccount();
    const alice = phone();
    await inbound(f, alice);
    const agent = await makeKey(f.accountId, { guardrails: { require_approval: true } });
    const now = await post("/v1/messages", agent, { from: f.line.handle, to: alice, text: "now" });
    // With the runner stopped the approved send stays pending, as on a busy line: still on its way.
    await stopRunner();
    try {
      expect((await post(`/v1/outbox/approve?id=${now.body.id}`, f.key)).body).toMatchObject({ status: "pending", hold_reason: null });
      for (const key of [agent, f.key]) {
        const late = await call("DELETE", `/v1/outbox?id=${now.body.id}`, { key });
        expect(late.status).toBe(409);
        expect(late.body.error).toMatchObject({ code: "outbox_item_not_cancelable", param: "id", message: expect.stringContaining("approved") });
      }
    } finally {
      await startRunner();
    }
    const later = await post("/v1/messages", agent, { from: f.line.handle, to: alice, text: "tomorrow", send_at: Date.now() + 86_400_000 });
    expect((await post(`/v1/outbox/approve?id=${later.body.id}`, f.key)).body).toMatchObject({ status: "pending", hold_reason: "scheduled" });
    const canceled = await call("DELETE", `/v1/outbox?id=${later.body.id}`, { key: agent });
    expect(canceled.status).toBe(200);
    expect(canceled.body).toMatchObject({ status: "failed", error: "canceled" });
  });
});

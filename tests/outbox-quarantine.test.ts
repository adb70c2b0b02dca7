import { describe, expect, it } from "vitest";
import { claimDue } from "@/server/outbox/queue";
import { deliverBatch } from "@/server/outbox/deliver";
import { db, get, inbound, makeAccount, phone, post } from "./helpers";

// A batch of sent items is recorded in one transaction. When the database refuses it because
// of one item, that item must not hold back the others nor come round again: the batch is
// split, the others are recorded, and the one it refuses is quarantined (failed, with the
// database's reason). No outbox runner here: the test claims and delivers the batch itself.

describe("recording a batch of sends", () => {
  it("records the rest of a batch at once and quarantines the one item the database refuses", async () => {
    const f = await makeAccount();
    const alice = phone();
    const bob = phone();
    await inbound(f, alice, "hi");
    await inbound(f, bob, "hi");
    const ids: string[] = [];
    for (let i = 0; i < 9; i++) ids.push((await post("/v1/messages", f.key, { from: f.line.handle, to: alice, text: `ok ${i}` })).body.id);
    const doomed = (await post("/v1/messages", f.key, { from: f.line.handle, to: bob, text: "its chat goes away" })).body.id as string;
    const prisma = await db();
    // The chat is deleted between the send and its recording: the message row cannot reference it.
    await prisma.chat.deleteMany({ where: { lineId: f.line.id, identifier: bob } });
    const claimed = await claimDue(100);
    expect(claimed.map((c) => c.id).sort()).toEqual([...ids, doomed].sort());
    await deliverBatch(claimed);

    const items = await prisma.outboxItem.findMany({ where: { id: { in: [...ids, doomed] } }, select: { id: true, status: true, error: true } });
    expect(items.filter((i) => ids.includes(i.id)).map((i) => i.status)).toEqual(ids.map(() => "sent"));
    const bad = items.find((i) => i.id === doomed)!;
    expect(bad.status).toBe("failed");
    expect(bad.error).toMatch(/could not be recorded/);
    // What a client sees: the good ones are messages, the quarantined one is a failed outbox item.
    expect((await get(`/v1/outbox?id=${doomed}`, f.key)).body).toMatchObject({ status: "failed", error: expect.stringMatching(/could not be recorded/) });
    expect(await prisma.message.count({ where: { outboxId: { in: ids } } })).toBe(9);
  });
});

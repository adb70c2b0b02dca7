import { describe, expect, it, vi } from "vitest";
import { receiveDeliveryReport } from "@/server/services/inbound/provider-events";
import type { DeliveryStatus } from "@/server/platform/types";
import { db, get, inbound, makeAccount, phone, post, runDelivery } from "./helpers";

// Delivery reports arrive unordered and repeated (Twilio status callbacks, SMS Gateway's
// sms:sent / sms:delivered / sms:failed). Whatever the order, a message moves from sent to
// the first final state reported and never leaves it, and its event fires once.

runDelivery();

function permutations<T>(items: T[]): T[][] {
  if (items.length <= 1) return [items];
  return items.flatMap((item, i) => permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]));
}

/** A sent message on a fresh line, with a webhook subscribed to the delivery events. */
async function sentMessage() {
  const f = await makeAccount();
  const to = phone();
  await inbound(f, to, "hello"); // contact-first
  const hook = await post("/v1/webhooks", f.key, { from: f.line.handle, url: "https://hooks.example.com/relay", events: ["message.delivered", "message.undelivered"] });
  expect(hook.status).toBe(200);
  const sent = await post("/v1/messages", f.key, { from: f.line.handle, to, text: "are you there?" });
  expect(sent.status).toBe(200);
  const message = await vi.waitFor(
    async () => {
      const m = (await get(`/v1/messages?from=${encodeURIComponent(f.line.handle)}&to=${encodeURIComponent(to)}`, f.key)).body.data.find((x: { outbox_id: string | null }) => x.outbox_id === sent.body.id);
      expect(m).toBeTruthy();
      return m as { id: string; guid: string };
    },
    { timeout: 10_000 },
  );
  const state = async () => (await get(`/v1/messages?from=${encodeURIComponent(f.line.handle)}&to=${encodeURIComponent(to)}`, f.key)).body.data.find((x: { id: string }) => x.id === message.id);
  const events = async () => (await (await db()).webhookDelivery.findMany({ where: { webhookId: hook.body.id }, orderBy: { createdAt: "asc" } })).map((d) => d.event);
  return { f, message, state, events };
}

const at = (minutes: number) => Date.UTC(2026, 10, 25, 12, minutes);

describe("delivery reports in any order", () => {
  const reports: { status: DeliveryStatus; at: number; reason: string | null }[] = [
    { status: "sent", at: at(0), reason: null },
    { status: "delivered", at: at(1), reason: null },
    { status: "undelivered", at: at(2), reason: "30003 Unreachable destination handset" },
  ];

  for (const order of permutations(reports)) {
    it(`${order.map((r) => r.status).join(" → ")}: the first final report wins and is never left; one event`, async () => {
      const { f, message, state, events } = await sentMessage();
      for (const report of order) expect(await receiveDeliveryReport(f.line.id, message.guid, report, null)).toBe("stored");
      // Each again: a duplicate, changing nothing.
      for (const report of order) expect(await receiveDeliveryReport(f.line.id, message.guid, report, null)).toBe("duplicate");
      const firstFinal = order.find((r) => r.status !== "sent")!;
      const m = await state();
      expect(m.delivery_status).toBe(firstFinal.status);
      expect(m.delivered_at).toBe(firstFinal.status === "delivered" ? firstFinal.at : null);
      expect(m.delivery_error).toBe(firstFinal.reason);
      expect(await events()).toEqual([firstFinal.status === "delivered" ? "message.delivered" : "message.undelivered"]);
    });
  }

  it("reports arriving together (one batch, repeats included) are stored once each and fire one event", async () => {
    const { f, message, state, events } = await sentMessage();
    const outcomes = await Promise.all([
      receiveDeliveryReport(f.line.id, message.guid, { status: "delivered", at: at(1), reason: null }, null),
      receiveDeliveryReport(f.line.id, message.guid, { status: "sent", at: at(0), reason: null }, 1),
      receiveDeliveryReport(f.line.id, message.guid, { status: "delivered", at: at(1), reason: null }, null),
    ]);
    expect(outcomes.sort()).toEqual(["duplicate", "stored", "stored"]);
    expect(await state()).toMatchObject({ delivery_status: "delivered", delivered_at: at(1) });
    expect(await events()).toEqual(["message.delivered"]);
  });

  it("sent alone is sent, without an event; failed is final and fires message.undelivered with its reason", async () => {
    const { f, message, state, events } = await sentMessage();
    await receiveDeliveryReport(f.line.id, message.guid, { status: "sent", at: at(0), reason: null }, 2);
    expect((await state()).delivery_status).toBe("sent");
    expect(await events()).toEqual([]);
    const outbox = await (await db()).outboxItem.findFirstOrThrow({ where: { lineId: f.line.id, kind: "message" } });
    expect(outbox.segments).toBe(2);
    expect((await get(`/v1/outbox?id=${outbox.id}`, f.key)).body).toMatchObject({ id: outbox.id, segments: 2 });

    await receiveDeliveryReport(f.line.id, message.guid, { status: "failed", at: at(3), reason: "carrier refused" }, null);
    expect(await state()).toMatchObject({ delivery_status: "failed", delivered_at: null, delivery_error: "carrier refused" });
    expect(await events()).toEqual(["message.undelivered"]);
  });

  it("a report for a message no line holds changes nothing and is kept for a send still returning", async () => {
    const { f, message, state } = await sentMessage();
    expect(await receiveDeliveryReport(f.line.id, "SM-never-sent", { status: "delivered", at: at(1), reason: null }, null)).toBe("stored");
    expect((await state()).delivery_status).toBeNull();
    const kept = await (await db()).deliveryReport.findMany({ where: { lineId: f.line.id } });
    expect(kept.map((r) => r.guid)).toEqual(["SM-never-sent"]);
    // Another line's report never touches this line's message, even with the same GUID.
    const other = await makeAccount();
    await receiveDeliveryReport(other.line.id, message.guid, { status: "undelivered", at: at(2), reason: "x" }, null);
    expect((await state()).delivery_status).toBeNull();
  });
});

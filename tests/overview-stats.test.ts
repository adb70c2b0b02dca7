import { describe, expect, it } from "vitest";
import { resetConfig } from "@/server/kernel/config";
import { newId } from "@/server/kernel/ids";
import { sessionActorFor } from "@/server/services/access/session";
import { forgetOldStatusChanges, noteProviderDown, noteProviderUp } from "@/server/services/lines/line-health";
import { createLine } from "@/server/services/lines/lines";
import { overviewStats } from "@/server/services/stats/overview-stats";
import { createCaller } from "@/server/transports/trpc/router";
import { createAccount } from "@/server/services/accounts/accounts";
import { db, makeAccount, phone, type Fixture } from "./helpers";

// The overview's per-day figures, seeded at known times over several days and checked bucket
// by bucket, in UTC and in a zone whose days start elsewhere (New York, UTC-5 in November).

const NOW = new Date("2026-11-20T15:00:00Z");
const t = (iso: string) => new Date(iso);
const DAYS_UTC = Array.from({ length: 14 }, (_, i) => `2026-11-${String(7 + i).padStart(2, "0")}`);

async function chatOn(f: Pick<Fixture, "accountId">, lineId: string) {
  return (await db()).chat.create({ data: { id: newId("chat"), accountId: f.accountId, lineId, identifier: phone(), service: "imessage" } });
}

async function message(f: Pick<Fixture, "accountId">, lineId: string, chatId: string, at: string, fromMe: boolean, extra: { outboxId?: string; deliveryStatus?: string } = {}) {
  await (await db()).message.create({
    data: { id: newId("message"), accountId: f.accountId, lineId, chatId, guid: newId("message"), sender: fromMe ? "me" : "them", text: "x", isFromMe: fromMe, sentAt: t(at), ...extra },
  });
}

async function outbox(f: Pick<Fixture, "accountId">, lineId: string, status: string, completedAt: string | null, kind = "message") {
  const id = newId("outbox");
  await (await db()).outboxItem.create({
    data: { id, accountId: f.accountId, lineId, kind, payload: {}, status, requestId: "req_seed", completedAt: completedAt ? t(completedAt) : null },
  });
  return id;
}

async function delivery(webhookId: string, createdAt: string, status: string, attempts: number, completedAt: string | null = null, lastError: string | null = null) {
  await (await db()).webhookDelivery.create({
    data: { id: newId("delivery"), webhookId, event: "message.received", payload: {}, status, attempts, createdAt: t(createdAt), completedAt: completedAt ? t(completedAt) : null, lastError },
  });
}

async function webhook(f: Pick<Fixture, "accountId">, lineId: string, extra: { kind?: string; isActive?: boolean; disabledReason?: string; failingSince?: Date } = {}) {
  return (await db()).webhook.create({
    data: { id: newId("webhook"), accountId: f.accountId, lineId, url: "https://hooks.example.com/relay", events: ["message.received"], secret: "whsec_test", ...extra },
  });
}

async function statusChange(f: Pick<Fixture, "accountId">, lineId: string, previousStatus: string, status: string, at: string, reason: string | null = null) {
  await (await db()).lineStatusChange.create({ data: { lineId, accountId: f.accountId, previousStatus, status, reason, at: t(at) } });
}

/** An account with a simulated line A (since October) and a BlueBubbles line B (since 10 November, noon), seeded over two weeks. */
async function seeded() {
  const f = await makeAccount();
  const d = await db();
  await d.line.update({ where: { id: f.line.id }, data: { createdAt: t("2026-10-01T00:00:00Z") } });
  const b = await createLine({ accountId: f.accountId, handle: phone(), label: "Mac mini" });
  await d.line.update({
    where: { id: b.id },
    data: { provider: "bluebubbles", createdAt: t("2026-11-10T12:00:00Z"), status: "degraded", statusReason: "the server did not answer", statusChangedAt: t("2026-11-19T20:00:00Z") },
  });
  const chatA = await chatOn(f, f.line.id);
  const chatB = await chatOn(f, b.id);
  // Messages: today (UTC) 2 sent and 1 received on A, plus one at 03:00 UTC (yesterday evening in New York).
  for (const fromMe of [true, true, false]) await message(f, f.line.id, chatA.id, "2026-11-20T10:00:00Z", fromMe);
  await message(f, f.line.id, chatA.id, "2026-11-20T03:00:00Z", false);
  await message(f, f.line.id, chatA.id, "2026-11-19T23:30:00Z", false);
  await message(f, f.line.id, chatA.id, "2026-11-07T03:00:00Z", true); // in the UTC window; 6 November in New York
  await message(f, f.line.id, chatA.id, "2026-11-06T23:59:00Z", true); // before either window
  for (let i = 0; i < 3; i++) await message(f, b.id, chatB.id, "2026-11-15T12:00:00Z", true);
  // Sends: today 3 sent (one delivered, one undelivered), 1 failed, 1 pending, a reaction; 2 failed on the 18th.
  const delivered = await outbox(f, f.line.id, "sent", "2026-11-20T11:00:00Z");
  const undelivered = await outbox(f, f.line.id, "sent", "2026-11-20T11:00:00Z");
  const plain = await outbox(f, f.line.id, "sent", "2026-11-20T11:00:00Z");
  await message(f, f.line.id, chatA.id, "2026-11-20T11:00:00Z", true, { outboxId: delivered, deliveryStatus: "delivered" });
  await message(f, f.line.id, chatA.id, "2026-11-20T11:00:00Z", true, { outboxId: undelivered, deliveryStatus: "undelivered" });
  await message(f, f.line.id, chatA.id, "2026-11-20T11:00:00Z", true, { outboxId: plain });
  await outbox(f, f.line.id, "failed", "2026-11-20T12:00:00Z");
  await outbox(f, f.line.id, "pending", null);
  await outbox(f, f.line.id, "sent", "2026-11-20T12:00:00Z", "reaction");
  await outbox(f, b.id, "failed", "2026-11-18T09:00:00Z");
  await outbox(f, b.id, "failed", "2026-11-18T09:30:00Z");
  // Webhook deliveries: today 3 succeeded, 1 failed, 1 retrying, 1 not yet tried; 2 succeeded on the 12th.
  const hook = await webhook(f, f.line.id, { failingSince: t("2026-11-20T12:00:00Z") });
  for (let i = 0; i < 3; i++) await delivery(hook.id, "2026-11-20T09:00:00Z", "succeeded", 1, "2026-11-20T09:00:01Z");
  await delivery(hook.id, "2026-11-19T09:00:00Z", "failed", 7, "2026-11-20T12:00:00Z", "HTTP 500");
  await delivery(hook.id, "2026-11-20T09:00:00Z", "pending", 2);
  await delivery(hook.id, "2026-11-20T14:59:00Z", "pending", 0);
  for (let i = 0; i < 2; i++) await delivery(hook.id, "2026-11-12T09:00:00Z", "succeeded", 1, "2026-11-12T09:00:01Z");
  // A listen stream's deliveries are not webhooks the owner set up.
  const stream = await webhook(f, f.line.id, { kind: "stream" });
  await delivery(stream.id, "2026-11-20T09:00:00Z", "failed", 1, "2026-11-20T09:00:01Z");
  const healthy = await webhook(f, f.line.id);
  await delivery(healthy.id, "2026-11-20T09:00:00Z", "succeeded", 1, "2026-11-20T09:00:01Z");
  const disabled = await webhook(f, b.id, { isActive: false, disabledReason: "the endpoint answered 410 Gone" });
  // Line B's health: degraded then disconnected on the 14th, back on the 15th, degraded since the 19th.
  await statusChange(f, b.id, "connected", "degraded", "2026-11-14T08:00:00Z", "probe failed");
  await statusChange(f, b.id, "degraded", "disconnected", "2026-11-14T09:00:00Z", "probe failed");
  await statusChange(f, b.id, "disconnected", "connected", "2026-11-15T10:00:00Z");
  await statusChange(f, b.id, "connected", "degraded", "2026-11-19T20:00:00Z", "the server did not answer");
  // Another account's rows on the same days count for it only.
  const other = await makeAccount();
  const otherChat = await chatOn(other, other.line.id);
  await message(other, other.line.id, otherChat.id, "2026-11-20T10:00:00Z", true);
  await outbox(other, other.line.id, "failed", "2026-11-20T10:00:00Z");
  return { f, a: f.line.id, b: b.id, hook: hook.id, healthy: healthy.id, disabled: disabled.id };
}

const zeros = () => DAYS_UTC.map(() => 0);
/** A series over DAYS_UTC: zero except on the days given. */
const series = (values: Record<string, number>) => DAYS_UTC.map((d) => values[d] ?? 0);

describe("overview statistics", () => {
  it("counts messages per line and day, sends by outcome, webhook deliveries and line health, in UTC", async () => {
    const s = await seeded();
    const stats = await overviewStats(sessionActorFor(s.f.accountId), { time_zone: "UTC" }, NOW);
    expect(stats.time_zone).toBe("UTC");
    expect(stats.days).toEqual(DAYS_UTC);
    expect(stats.lines.map((l) => l.id)).toEqual([s.a, s.b]);

    const msgs = Object.fromEntries(stats.messages.map((m) => [m.line_id, m]));
    expect(Object.keys(msgs).sort()).toEqual([s.a, s.b].sort());
    expect(msgs[s.a]!.sent).toEqual(series({ "2026-11-07": 1, "2026-11-20": 5 }));
    expect(msgs[s.a]!.received).toEqual(series({ "2026-11-19": 1, "2026-11-20": 2 }));
    expect(msgs[s.b]!.sent).toEqual(series({ "2026-11-15": 3 }));
    expect(msgs[s.b]!.received).toEqual(zeros());

    const delivery = Object.fromEntries(stats.delivery.map((d) => [d.day, d]));
    expect(stats.delivery).toHaveLength(14);
    expect(delivery["2026-11-20"]).toEqual({ day: "2026-11-20", sent: 1, delivered: 1, undelivered: 1, failed: 1, rate: 0.5 });
    expect(delivery["2026-11-18"]).toEqual({ day: "2026-11-18", sent: 0, delivered: 0, undelivered: 0, failed: 2, rate: 0 });
    expect(delivery["2026-11-19"]).toEqual({ day: "2026-11-19", sent: 0, delivered: 0, undelivered: 0, failed: 0, rate: null });

    const hooks = Object.fromEntries(stats.webhooks.map((d) => [d.day, d]));
    expect(hooks["2026-11-20"]).toEqual({ day: "2026-11-20", succeeded: 4, failed: 0, retrying: 1, rate: 0.8 });
    expect(hooks["2026-11-19"]).toEqual({ day: "2026-11-19", succeeded: 0, failed: 1, retrying: 0, rate: 0 });
    expect(hooks["2026-11-12"]).toEqual({ day: "2026-11-12", succeeded: 2, failed: 0, retrying: 0, rate: 1 });
    expect(stats.webhooks.filter((d) => d.rate === null)).toHaveLength(11);

    const health = Object.fromEntries(stats.health.map((h) => [h.line_id, h]));
    expect(health[s.a]!.statuses).toEqual(DAYS_UTC.map(() => "connected"));
    expect(health[s.b]!.statuses).toEqual([
      null, null, null, // 7-9: no line yet
      "connected", "connected", "connected", "connected", // 10-13
      "disconnected", // 14: degraded, then disconnected
      "disconnected", // 15: disconnected until 10:00
      "connected", "connected", "connected", // 16-18
      "degraded", // 19: from 20:00
      "degraded", // 20: no change since: the line's current status
    ]);
    expect(health[s.b]!.changes).toEqual(series({ "2026-11-14": 2, "2026-11-15": 1, "2026-11-19": 1 }));

    expect(stats.attention.lines).toEqual([
      expect.objectContaining({ id: s.b, status: "degraded", reason: "the server did not answer", since: t("2026-11-19T20:00:00Z").getTime() }),
    ]);
    expect(stats.attention.webhooks).toEqual([
      expect.objectContaining({ id: s.disabled, is_active: false, disabled_reason: "the endpoint answered 410 Gone", failed_recently: 0 }),
      expect.objectContaining({ id: s.hook, is_active: true, failing_since: t("2026-11-20T12:00:00Z").getTime(), failed_recently: 1, last_error: "HTTP 500" }),
    ]);
    expect(stats.setup).toEqual({ simulator_enabled: true, line: true, key: true, message: true, webhook: true });
  });

  it("starts days at local midnight in the browser's time zone", async () => {
    const s = await seeded();
    const stats = await overviewStats(sessionActorFor(s.f.accountId), { time_zone: "America/New_York" }, NOW);
    expect(stats.time_zone).toBe("America/New_York");
    expect(stats.days).toEqual(DAYS_UTC); // 10:00 on the 20th in New York: the same dates
    const a = stats.messages.find((m) => m.line_id === s.a)!;
    // 03:00 and the 23:30 UTC of the day before are both the evening of the 19th in New York;
    // 03:00 UTC on the 7th is the 6th there, before the window.
    expect(a.received).toEqual(series({ "2026-11-19": 2, "2026-11-20": 1 }));
    expect(a.sent).toEqual(series({ "2026-11-20": 5 }));
    // Line B was created at 07:00 on the 10th, New York time; its changes on the 14th (03:00 and
    // 04:00 there), the 15th (05:00) and the 19th (15:00) fall on the same dates.
    expect(stats.health.find((h) => h.line_id === s.b)!.statuses.slice(3, 9)).toEqual(["connected", "connected", "connected", "connected", "disconnected", "disconnected"]);
  });

  it("falls back to UTC for a zone the database does not know, and refuses a malformed one", async () => {
    const f = await makeAccount();
    const caller = createCaller({ actor: sessionActorFor(f.accountId), requestId: "req_test" });
    const stats = await caller.stats.overview({ time_zone: "Mars/Olympus_Mons" });
    expect(stats.time_zone).toBe("UTC");
    expect(stats.days).toHaveLength(14);
    expect(stats.days.at(-1)).toBe(new Date().toISOString().slice(0, 10));
    await expect(caller.stats.overview({ time_zone: "UTC'; DROP TABLE x" })).rejects.toMatchObject({ code: "BAD_REQUEST" });
  });

  it("says a chart is empty, and which setup steps are left", async () => {
    const account = await createAccount({ email: `empty-${Date.now()}@example.com` });
    const stats = await overviewStats(sessionActorFor(account.id), {}, NOW);
    expect(stats.messages).toEqual([]);
    expect(stats.health).toEqual([]);
    expect(stats.delivery.every((d) => d.rate === null)).toBe(true);
    expect(stats.webhooks.every((d) => d.rate === null)).toBe(true);
    expect(stats.attention).toEqual({ lines: [], webhooks: [] });
    expect(stats.setup).toEqual({ simulator_enabled: true, line: false, key: false, message: false, webhook: false });
  });

  it("with the simulator off, only a line on a real provider counts as the first step", async () => {
    const f = await makeAccount();
    process.env.SIMULATOR_ENABLED = "false";
    resetConfig();
    try {
      const before = await overviewStats(sessionActorFor(f.accountId), {}, NOW);
      expect(before.setup).toMatchObject({ simulator_enabled: false, line: false, key: true });
      await (await db()).line.update({ where: { id: f.line.id }, data: { provider: "twilio" } });
      expect((await overviewStats(sessionActorFor(f.accountId), {}, NOW)).setup.line).toBe(true);
    } finally {
      delete process.env.SIMULATOR_ENABLED;
      resetConfig();
    }
  });

  it("shows a line-restricted caller its own lines only", async () => {
    const s = await seeded();
    const actor = { ...sessionActorFor(s.f.accountId), lineIds: new Set([s.a]) };
    const stats = await overviewStats(actor, { time_zone: "UTC" }, NOW);
    expect(stats.messages.map((m) => m.line_id)).toEqual([s.a]);
    expect(stats.health.map((h) => h.line_id)).toEqual([s.a]);
    expect(stats.delivery.find((d) => d.day === "2026-11-18")!.failed).toBe(0);
    expect(stats.attention.webhooks.map((w) => w.id)).toEqual([s.hook]);
  });
});

describe("line status history", () => {
  it("is written by the health writer with each change of status, and forgotten after 30 days", async () => {
    const f = await makeAccount();
    const d = await db();
    await d.line.update({ where: { id: f.line.id }, data: { provider: "bluebubbles" } });
    await noteProviderDown(f.line.id, "connection refused");
    await noteProviderDown(f.line.id, "connection refused"); // the same status again: no new row
    await noteProviderUp(f.line.id);
    const rows = await d.lineStatusChange.findMany({ where: { lineId: f.line.id }, orderBy: { id: "asc" } });
    expect(rows.map((r) => [r.previousStatus, r.status, r.reason, r.accountId])).toEqual([
      ["connected", "degraded", "connection refused", f.accountId],
      ["degraded", "connected", null, f.accountId],
    ]);
    const line = await d.line.findUniqueOrThrow({ where: { id: f.line.id } });
    expect(rows[1]!.at.getTime()).toBe(line.statusChangedAt!.getTime());
    await statusChange(f, f.line.id, "connected", "degraded", new Date(Date.now() - 31 * 86_400_000).toISOString());
    expect(await forgetOldStatusChanges()).toBeGreaterThanOrEqual(1);
    expect(await d.lineStatusChange.count({ where: { lineId: f.line.id } })).toBe(2);
  });
});

import { describe, expect, it, vi } from "vitest";
import { setLinePolicy } from "@/server/services/lines/set-line-policy";
import { SendPolicyInput } from "@/server/policy/line-send-policy";
import { budgetUse, HOUR_MS } from "@/server/policy/new-contact-budget";
import { call, db, get, inbound, makeAccount, makeKey, phone, post, runDelivery, type Fixture } from "./helpers";

// Holds and the line send policy through /v1: scheduled sends, cancel and reschedule, contact
// first switched off, new-contact budgets, quiet hours and capacity.

runDelivery();

const q = encodeURIComponent;
type Item = { id: string; status: string; error: string | null; hold_reason: string | null; not_before: number | null; canceled_at: number | null; completed_at: number | null; line_id: string; pool_id: string | null };

const item = async (f: Fixture, id: string): Promise<Item> => (await get(`/v1/outbox?id=${id}`, f.key)).body;
const del = (f: Fixture, id: string) => call("DELETE", `/v1/outbox?id=${id}`, { key: f.key });
const patch = (f: Fixture, id: string, body: unknown) => call("PATCH", `/v1/outbox?id=${id}`, { key: f.key, body });

async function waitSent(f: Fixture, id: string): Promise<Item> {
  let last: Item | null = null;
  await vi.waitFor(
    async () => {
      last = await item(f, id);
      expect(last.status).toBe("sent");
    },
    { timeout: 15_000, interval: 25 },
  );
  return last!;
}

async function messagesWith(f: Fixture, to: string, text: string) {
  const res = await get(`/v1/messages?from=${q(f.line.handle)}&to=${q(to)}`, f.key);
  return (res.body.data ?? []).filter((m: { text: string | null }) => m.text === text);
}

/** An account whose line may message people first (contact-first off). */
async function openAccount(policy: SendPolicyInput = {}) {
  const f = await makeAccount();
  await setLinePolicy(null, f.line.id, { contact_first: false, ...policy });
  return f;
}

describe("scheduled sends (send_at)", () => {
  it("holds the item as pending with hold_reason scheduled until send_at, then sends it, never early", async () => {
    const f = await makeAccount();
    const alice = phone();
    await inbound(f, alice);
    const at = Date.now() + 1_500;
    const res = await post("/v1/messages", f.key, { from: f.line.handle, to: alice, text: "later", send_at: at });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ object: "outbox_item", status: "pending" });
    expect(await item(f, res.body.id)).toMatchObject({ status: "pending", hold_reason: "scheduled", not_before: at, canceled_at: null });
    // Listed as pending too (clients parse status as a strict enum).
    const pending = await get(`/v1/outbox?status=pending&from=${q(f.line.handle)}`, f.key);
    expect(pending.body.data.map((i: Item) => i.id)).toContain(res.body.id);
    const sent = await waitSent(f, res.body.id);
    expect(sent.completed_at).toBeGreaterThanOrEqual(at);
    expect(sent).toMatchObject({ hold_reason: null, not_before: null, error: null });
    expect(await messagesWith(f, alice, "later")).toHaveLength(1);
  });

  it("refuses a send_at in the past, too far ahead, in seconds or not a number, naming send_at", async () => {
    const f = await makeAccount();
    const alice = phone();
    await inbound(f, alice);
    const cases: unknown[] = [Date.now() - 1_000, Date.now() + 366 * 24 * HOUR_MS, Math.floor(Date.now() / 1000) + 600, "tomorrow", 1.5e12 + 0.5];
    for (const send_at of cases) {
      const res = await post("/v1/messages", f.key, { from: f.line.handle, to: alice, text: "x", send_at });
      expect(res.status, String(send_at)).toBe(400);
      expect(res.body.error).toMatchObject({ code: "invalid_parameter_value", param: "send_at" });
      expect(res.body.request_id).toMatch(/^req_/);
    }
    // Nothing was stored.
    expect((await get(`/v1/outbox?from=${q(f.line.handle)}`, f.key)).body.data).toHaveLength(0);
  });

  it("cancels a pending item: failed with error canceled, never sent; a second cancel is 409", async () => {
    const f = await makeAccount();
    const alice = phone();
    await inbound(f, alice);
    const res = await post("/v1/messages", f.key, { from: f.line.handle, to: alice, text: "never", send_at: Date.now() + 600 });
    const canceled = await del(f, res.body.id);
    expect(canceled.status).toBe(200);
    expect(canceled.body).toMatchObject({ id: res.body.id, status: "failed", error: "canceled", canceled_at: expect.any(Number), hold_reason: null });
    const again = await del(f, res.body.id);
    expect(again.status).toBe(409);
    expect(again.body.error).toMatchObject({ code: "outbox_item_not_cancelable", param: "id" });
    await new Promise((r) => setTimeout(r, 1_200));
    expect(await item(f, res.body.id)).toMatchObject({ status: "failed", error: "canceled" });
    expect(await messagesWith(f, alice, "never")).toHaveLength(0);
    // A sent item cannot be canceled either, and an unknown one is 404.
    const now = await post("/v1/messages", f.key, { from: f.line.handle, to: alice, text: "now" });
    await waitSent(f, now.body.id);
    expect((await del(f, now.body.id)).body.error.code).toBe("outbox_item_not_cancelable");
    expect((await del(f, "obx_nope")).status).toBe(404);
  });

  it("needs messages:write to cancel or reschedule, and keeps other accounts' items out of reach", async () => {
    const f = await makeAccount();
    const other = await makeAccount();
    const alice = phone();
    await inbound(f, alice);
    const res = await post("/v1/messages", f.key, { from: f.line.handle, to: alice, text: "mine", send_at: Date.now() + 60_000 });
    const reader = await makeKey(f.accountId, { scopes: ["outbox:read"] });
    expect((await call("DELETE", `/v1/outbox?id=${res.body.id}`, { key: reader })).body.error.code).toBe("insufficient_scope");
    expect((await del(other, res.body.id)).body.error.code).toBe("outbox_item_not_found");
    expect((await patch(other, res.body.id, { send_at: Date.now() + 120_000 })).body.error.code).toBe("outbox_item_not_found");
    expect(await item(f, res.body.id)).toMatchObject({ status: "pending", hold_reason: "scheduled" });
  });

  it("a cancel racing the claim: exactly one wins for every item", async () => {
    const f = await makeAccount();
    const alice = phone();
    await inbound(f, alice);
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) ids.push((await post("/v1/messages", f.key, { from: f.line.handle, to: alice, text: `race ${i}`, send_at: Date.now() + 300 })).body.id);
    await new Promise((r) => setTimeout(r, 280));
    const answers = await Promise.all(ids.map((id) => del(f, id)));
    for (const [i, id] of ids.entries()) {
      const final = answers[i]!.status === 200 ? await item(f, id) : await waitSent(f, id);
      if (answers[i]!.status === 200) {
        expect(final).toMatchObject({ status: "failed", error: "canceled" });
        expect(await messagesWith(f, alice, `race ${i}`)).toHaveLength(0);
      } else {
        expect(answers[i]!.body.error.code).toBe("outbox_item_not_cancelable");
        expect(final.status).toBe("sent");
        expect(await messagesWith(f, alice, `race ${i}`)).toHaveLength(1);
      }
    }
  });

  it("reschedules: later is never sent at the old time, earlier goes at the new one", async () => {
    const f = await makeAccount();
    const alice = phone();
    await inbound(f, alice);
    const later = await post("/v1/messages", f.key, { from: f.line.handle, to: alice, text: "moved later", send_at: Date.now() + 500 });
    const newTime = Date.now() + 3_600_000;
    const moved = await patch(f, later.body.id, { send_at: newTime });
    expect(moved.status).toBe(200);
    expect(moved.body).toMatchObject({ status: "pending", hold_reason: "scheduled", not_before: newTime });
    const sooner = await post("/v1/messages", f.key, { from: f.line.handle, to: alice, text: "moved sooner", send_at: Date.now() + 3_600_000 });
    const soon = Date.now() + 400;
    expect((await patch(f, sooner.body.id, { send_at: soon })).status).toBe(200);
    const sent = await waitSent(f, sooner.body.id);
    expect(sent.completed_at).toBeGreaterThanOrEqual(soon);
    await new Promise((r) => setTimeout(r, 800));
    expect(await item(f, later.body.id)).toMatchObject({ status: "pending", hold_reason: "scheduled" });
    expect(await messagesWith(f, alice, "moved later")).toHaveLength(0);
    const bad = await patch(f, later.body.id, { send_at: Date.now() - 5 });
    expect(bad.body.error).toMatchObject({ code: "invalid_parameter_value", param: "send_at" });
    const unknownField = await patch(f, later.body.id, { send_at: newTime, text: "sneaky" });
    expect(unknownField.status).toBe(400);
    expect((await patch(f, sooner.body.id, { send_at: newTime })).body.error.code).toBe("outbox_item_not_reschedulable");
  });
});

describe("line send policy", () => {
  it("shows the policy on GET /v1/lines; an SMS line has no budgets by default", async () => {
    const sms = await makeAccount({ service: "sms" });
    const line = (await get("/v1/lines", sms.key)).body.data.find((l: { id: string }) => l.id === sms.line.id);
    expect(line.send_policy).toEqual({ contact_first: true, new_contacts_per_hour: null, new_contacts_per_day: null, quiet_hours: null, rate_per_second: 1 });
  });

  it("refuses bad values, naming the field", () => {
    const cases: [unknown, string][] = [
      [{ new_contacts_per_hour: -1 }, "new_contacts_per_hour"],
      [{ new_contacts_per_day: 2.5 }, "new_contacts_per_day"],
      [{ colour: "red" }, ""],
      [{ quiet_hours: { start: "21:00", end: "08:00", timezone: "Mars/Olympus" } }, "quiet_hours.timezone"],
      [{ quiet_hours: { start: "9pm", end: "08:00", timezone: "UTC" } }, "quiet_hours.start"],
      [{ contact_first: "yes" }, "contact_first"],
      [{ rate_per_second: 0 }, "rate_per_second"],
    ];
    for (const [input, path] of cases) {
      const parsed = SendPolicyInput.safeParse(input);
      expect(parsed.success, JSON.stringify(input)).toBe(false);
      expect(parsed.error!.issues.map((i) => i.path.join(".")), JSON.stringify(input)).toContain(path);
    }
  });

  it("with contact-first on (SPEC), a new contact is refused; switched off, the line messages them first", async () => {
    const f = await makeAccount();
    const bob = phone();
    const refused = await post("/v1/messages", f.key, { from: f.line.handle, to: bob, text: "hi bob" });
    expect(refused.body.error.code).toBe("contact_has_not_messaged");
    await setLinePolicy(null, f.line.id, { contact_first: false });
    const res = await post("/v1/messages", f.key, { from: f.line.handle, to: bob, text: "hi bob" });
    expect(res.status).toBe(200);
    await waitSent(f, res.body.id);
    expect(await messagesWith(f, bob, "hi bob")).toHaveLength(1);
    // A handle that is no phone number or address is still refused.
    const bad = await post("/v1/messages", f.key, { from: f.line.handle, to: "not a number", text: "x" });
    expect(bad.body.error).toMatchObject({ code: "invalid_parameter_value", param: "to" });
  });

  it("holds sends over the new-contact budget (not refused) until a slot frees; known contacts are not counted", async () => {
    const f = await openAccount({ new_contacts_per_hour: 2, new_contacts_per_day: 50 });
    const known = phone();
    await inbound(f, known);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await post("/v1/messages", f.key, { from: f.line.handle, to: phone(), text: `new ${i}` })).body.id);
    const reply = await post("/v1/messages", f.key, { from: f.line.handle, to: known, text: "to a known contact" });
    await waitSent(f, ids[0]!);
    await waitSent(f, ids[1]!);
    await waitSent(f, reply.body.id);
    let third: Item | null = null;
    await vi.waitFor(async () => {
      third = await item(f, ids[2]!);
      expect(third.hold_reason).toBe("new_contact_budget");
    });
    expect(third!.status).toBe("pending");
    const first = await item(f, ids[0]!);
    // The slot frees when the first opening leaves the sliding hour.
    expect(third!.not_before).toBeGreaterThanOrEqual(first.completed_at! - 1_000 + HOUR_MS);
    expect(third!.not_before).toBeLessThanOrEqual(first.completed_at! + 1_000 + HOUR_MS);
    const cap = await get(`/v1/capacity?from=${q(f.line.handle)}`, f.key);
    expect(cap.status).toBe(200);
    expect(cap.body.lines[0]).toMatchObject({
      line_id: f.line.id,
      status: "connected",
      new_contacts: { hour: { used: 2, limit: 2, remaining: 0 }, day: { used: 2, limit: 50, remaining: 48 } },
      quiet_hours: { active: false, until: null },
      queued: { new_contact_budget: 1, scheduled: 0 },
      next_slot_at: third!.not_before,
    });
    // Raising the budget releases it at once.
    await setLinePolicy(null, f.line.id, { new_contacts_per_hour: 3 });
    await waitSent(f, ids[2]!);
  });

  it("a budget of 0 holds until a person changes it (not_before null)", async () => {
    const f = await openAccount({ new_contacts_per_hour: 0 });
    const res = await post("/v1/messages", f.key, { from: f.line.handle, to: phone(), text: "blocked" });
    await vi.waitFor(async () => expect((await item(f, res.body.id)).hold_reason).toBe("new_contact_budget"));
    expect(await item(f, res.body.id)).toMatchObject({ status: "pending", not_before: null });
    const cap = (await get(`/v1/capacity?from=${q(f.line.id)}`, f.key)).body.lines[0];
    expect(cap.next_slot_at).toBeNull();
    await setLinePolicy(null, f.line.id, { new_contacts_per_hour: null });
    await waitSent(f, res.body.id);
  });

  it("capacity counts a line's held items exactly, also past 10,000 (then kept a few seconds, and counted again)", async () => {
    const f = await makeAccount();
    const prisma = await db();
    const hold = (from: number, n: number) =>
      prisma.$executeRawUnsafe(
        `INSERT INTO "OutboxItem" (id, "accountId", "lineId", kind, payload, status, "holdReason", "availableAt", "requestId")
         SELECT 'obx_cap' || $3 || lpad(g::text, 8, '0'), $1, $2, 'message', '{}'::jsonb, 'held', 'scheduled', now() + interval '30 days', 'req_test'
         FROM generate_series($4::int, $5::int) g`,
        f.accountId,
        f.line.id,
        f.line.id.slice(-6),
        from,
        from + n - 1,
      );
    const queued = async () => (await get(`/v1/capacity?from=${q(f.line.handle)}`, f.key)).body.lines[0].queued;
    await hold(1, 9_999);
    expect(await queued()).toMatchObject({ scheduled: 9_999, quiet_hours: 0, new_contact_budget: 0 });
    await hold(10_000, 51); // past the exact count's cap: counted in full
    expect((await queued()).scheduled).toBe(10_050);
    await hold(20_000, 10);
    const kept = (await queued()).scheduled;
    expect([10_050, 10_060]).toContain(kept); // at most a few seconds old
    await vi.waitFor(async () => expect((await queued()).scheduled).toBe(10_060), { timeout: 20_000, interval: 500 });
  }, 40_000);

  it("quiet hours hold new messages until the window ends, but a reply to someone who just wrote goes", async () => {
    const now = new Date();
    const hhmm = (d: Date) => `${String(d.getUTCHours()).padStart(2, "0")}:${String(d.getUTCMinutes()).padStart(2, "0")}`;
    const quiet = { start: hhmm(new Date(now.getTime() - 3_600_000)), end: hhmm(new Date(now.getTime() + 3_600_000)), timezone: "UTC" };
    const f = await openAccount({ quiet_hours: quiet });
    const talker = phone();
    await inbound(f, talker, "are you there?");
    const reply = await post("/v1/messages", f.key, { from: f.line.handle, to: talker, text: "yes" });
    const cold = await post("/v1/messages", f.key, { from: f.line.handle, to: phone(), text: "good evening" });
    await waitSent(f, reply.body.id);
    await vi.waitFor(async () => expect((await item(f, cold.body.id)).hold_reason).toBe("quiet_hours"));
    const held = await item(f, cold.body.id);
    const end = new Date(now);
    end.setUTCHours(Number(quiet.end.slice(0, 2)), Number(quiet.end.slice(3)), 0, 0);
    if (end.getTime() < now.getTime()) end.setTime(end.getTime() + 24 * HOUR_MS);
    expect(held).toMatchObject({ status: "pending", not_before: end.getTime() });
    const cap = (await get(`/v1/capacity?from=${q(f.line.handle)}`, f.key)).body.lines[0];
    expect(cap.quiet_hours).toEqual({ active: true, until: end.getTime() });
    expect(cap.queued.quiet_hours).toBe(1);
    // A contact whose last message is older than 30 minutes gets no exemption.
    const sleeper = phone();
    await inbound(f, sleeper, "earlier today");
    await (await db()).$executeRawUnsafe(`UPDATE "Message" SET "sentAt" = now() - interval '2 hours' WHERE sender = $1`, sleeper);
    const late = await post("/v1/messages", f.key, { from: f.line.handle, to: sleeper, text: "late reply" });
    await vi.waitFor(async () => expect((await item(f, late.body.id)).hold_reason).toBe("quiet_hours"));
    // Lifting quiet hours releases them.
    await setLinePolicy(null, f.line.id, { quiet_hours: null });
    await waitSent(f, cold.body.id);
    await waitSent(f, late.body.id);
  });
});

describe("budgets' sliding windows", () => {
  const policy = { new_contacts_per_hour: 2, new_contacts_per_day: 3 };
  const t0 = Date.UTC(2026, 10, 27, 10, 0, 0);

  it("frees a slot when the oldest opening leaves the hour, across the hour's boundary", () => {
    const openings = [t0, t0 + 50 * 60_000];
    const at = t0 + 55 * 60_000;
    const use = budgetUse(openings, policy, at);
    expect(use.hour).toEqual({ used: 2, limit: 2, remaining: 0, resets_at: t0 + HOUR_MS });
    expect(use.next_slot_at).toBe(t0 + HOUR_MS);
    // One millisecond past the hour the first opening is out: room again.
    const after = budgetUse(openings, policy, t0 + HOUR_MS + 1);
    expect(after.hour.used).toBe(1);
    expect(after.next_slot_at).toBe(t0 + HOUR_MS + 1);
  });

  it("the day's window binds when the hour's does not", () => {
    const openings = [t0, t0 + 2 * HOUR_MS, t0 + 4 * HOUR_MS];
    const at = t0 + 6 * HOUR_MS;
    const use = budgetUse(openings, policy, at);
    expect(use.hour.used).toBe(0);
    expect(use.day).toMatchObject({ used: 3, remaining: 0 });
    expect(use.next_slot_at).toBe(t0 + 24 * HOUR_MS);
  });
});

import { afterAll, describe, expect, it, vi } from "vitest";
import { createLine } from "@/server/services/lines/lines";
import { setLinePolicy } from "@/server/services/lines/set-line-policy";
import { createPool } from "@/server/services/pools/pools";
import { type FakeBlueBubbles, startFakeBlueBubbles } from "./fakes/bluebubbles";
import { blueBubblesLine, db, dispatch, get, inbound, makeAccount, phone, post, runDelivery, type Fixture } from "./helpers";

// SMS fallback per recipient: with the simulator's reachability switch, and against the
// BlueBubbles fake (its availability check, its "not registered" refusal, and a send whose
// outcome was unknown but went out, after which no SMS may follow).

runDelivery();

const q = encodeURIComponent;
type Item = { id: string; status: string; line_id: string; fallback: boolean; attempts: number; error: string | null };
type Message = { text: string | null; service: string; fallback: boolean; is_from_me: boolean; chat_id: string };

async function settled(key: string, id: string, timeout = 15_000): Promise<Item> {
  let item: Item | null = null;
  await vi.waitFor(
    async () => {
      item = (await get(`/v1/outbox?id=${id}`, key)).body;
      expect(["sent", "failed"]).toContain(item!.status);
    },
    { timeout, interval: 25 },
  );
  return item!;
}

async function messages(key: string, lineHandle: string, to: string): Promise<Message[]> {
  return (await get(`/v1/messages?from=${q(lineHandle)}&to=${q(to)}`, key)).body.data ?? [];
}

const noIMessage = (f: Fixture, line: string, handle: string) => post("/api/simulator/reachability", f.key, { line, handle, imessage: false });

describe("SMS fallback with the simulator", () => {
  it("an auto line sends as SMS to a contact without iMessage, and remembers it", async () => {
    const f = await makeAccount({ service: "auto" });
    const alice = phone();
    await inbound(f, alice, "hi");
    const off = await noIMessage(f, f.line.handle, alice);
    expect(off.status).toBe(200);
    expect(off.body).toMatchObject({ line: f.line.handle, handle: alice, imessage: false });
    const first = await post("/v1/messages", f.key, { from: f.line.handle, to: alice, text: "by SMS" });
    expect(await settled(f.key, first.body.id)).toMatchObject({ status: "sent", fallback: true, line_id: f.line.id, attempts: 1 });
    const [m] = await messages(f.key, f.line.handle, alice);
    expect(m).toMatchObject({ text: "by SMS", service: "sms", fallback: true, is_from_me: true });
    // Remembered: the next send goes as SMS without being refused first.
    const rows = await (await db()).reachability.findMany({ where: { lineId: f.line.id, handle: alice } });
    expect(rows).toEqual([expect.objectContaining({ imessage: false })]);
    const second = await post("/v1/messages", f.key, { from: f.line.handle, to: alice, text: "again" });
    expect(await settled(f.key, second.body.id)).toMatchObject({ status: "sent", fallback: true, attempts: 1 });
  });

  it("an iMessage line alone cannot fall back: the refusal fails the send, as a real Mac's would", async () => {
    const f = await makeAccount();
    const bob = phone();
    await inbound(f, bob, "hi");
    await noIMessage(f, f.line.handle, bob);
    const res = await post("/v1/messages", f.key, { from: f.line.handle, to: bob, text: "no luck" });
    expect(await settled(f.key, res.body.id)).toMatchObject({ status: "failed", fallback: false, error: "the recipient is not registered with iMessage" });
    expect((await messages(f.key, f.line.handle, bob)).filter((m) => m.is_from_me)).toHaveLength(0);
  });

  it("a pool with an SMS line: the message moves to the SMS line, into the contact's chat there", async () => {
    const f = await makeAccount();
    const sms = await createLine({ accountId: f.accountId, handle: phone(), service: "sms" });
    const pool = await createPool(f.accountId, { name: "mixed", line_ids: [f.line.id, sms.id] });
    const carol = phone();
    // Contact-first holds on the SMS line too (tests/sms-fallback-checks.test.ts): she texted it once.
    await inbound({ ...f, line: { id: sms.id, handle: sms.handle } }, carol, "by SMS");
    await inbound(f, carol, "hello there");
    await noIMessage(f, f.line.handle, carol);
    const res = await post("/v1/messages", f.key, { from: pool.id, to: carol, text: "from the SMS line" });
    expect(await settled(f.key, res.body.id)).toMatchObject({ status: "sent", fallback: true, line_id: sms.id });
    const [m] = await messages(f.key, sms.handle, carol);
    expect(m).toMatchObject({ text: "from the SMS line", service: "sms", fallback: true });
    expect((await messages(f.key, f.line.handle, carol)).filter((x) => x.is_from_me)).toHaveLength(0);
  });

  it("the switch follows the simulator's rules: scopes, and only the account's own simulated lines", async () => {
    const f = await makeAccount();
    const other = await makeAccount();
    const denied = await post("/api/simulator/reachability", other.key, { line: f.line.handle, handle: phone(), imessage: false });
    expect(denied.status).toBe(404);
    expect(denied.body.error.code).toBe("line_not_found");
    const bad = await post("/api/simulator/reachability", f.key, { line: f.line.handle, handle: phone(), imessage: "no" });
    expect(bad.body.error).toMatchObject({ code: "invalid_parameter_value", param: "imessage" });
  });
});

describe("SMS fallback against BlueBubbles", () => {
  let webhooksOn = true;
  const fakes: FakeBlueBubbles[] = [];
  async function fake(): Promise<FakeBlueBubbles> {
    const bb = await startFakeBlueBubbles({
      deliver: async (url, body) => {
        if (webhooksOn) await dispatch(new Request(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }));
      },
    });
    fakes.push(bb);
    return bb;
  }
  afterAll(async () => {
    await Promise.all(fakes.map((b) => b.close()));
  });

  it("asks the Mac's availability check first: a new contact without iMessage gets SMS at once, and the answer is remembered", async () => {
    const bb = await fake();
    const f = await blueBubblesLine(bb, { service: "auto" });
    await setLinePolicy(null, f.line.id, { contact_first: false });
    bb.imessageRegistered = new Set();
    const dan = phone();
    const res = await post("/v1/messages", f.key, { from: f.line.handle, to: dan, text: "sms first" });
    expect(await settled(f.key, res.body.id)).toMatchObject({ status: "sent", fallback: true, attempts: 1 });
    const checks = () => bb.requests.filter((r) => r.path === "/api/v1/handle/availability/imessage").length;
    expect(checks()).toBe(1);
    const newChats = bb.requests.filter((r) => r.path === "/api/v1/chat/new").map((r) => (r.body as { service?: string }).service);
    expect(newChats).toEqual(["SMS"]); // never tried as iMessage
    const again = await post("/v1/messages", f.key, { from: f.line.handle, to: dan, text: "still sms" });
    expect(await settled(f.key, again.body.id)).toMatchObject({ status: "sent", fallback: true });
    expect(checks()).toBe(1);
    const sent = await messages(f.key, f.line.handle, dan);
    expect(sent.map((m) => [m.text, m.service, m.fallback])).toEqual([
      ["still sms", "sms", true],
      ["sms first", "sms", true],
    ]);
  });

  it("a contact the check calls reachable but whose send is refused as not registered goes again as SMS, once", async () => {
    const bb = await fake();
    const f = await blueBubblesLine(bb, { service: "auto" });
    const erin = phone();
    bb.receive({ from: erin, text: "hi" });
    await bb.idle();
    bb.imessageRegistered = new Set(); // the chat exists (iMessage), but the send is refused
    const res = await post("/v1/messages", f.key, { from: f.line.handle, to: erin, text: "refused then sms" });
    expect(await settled(f.key, res.body.id)).toMatchObject({ status: "sent", fallback: true });
    const ours = bb.messages.filter((m) => m.isFromMe && m.text === "refused then sms" && !m.error);
    expect(ours).toHaveLength(1);
    const [m] = await messages(f.key, f.line.handle, erin);
    expect(m).toMatchObject({ text: "refused then sms", service: "sms", fallback: true });
  });

  it("an iMessage send whose outcome was unknown, but which went out, is adopted: no SMS follows", async () => {
    const bb = await fake();
    const f = await blueBubblesLine(bb, { service: "auto", timeout: 5 });
    const fay = phone();
    bb.receive({ from: fay, text: "hi" });
    await bb.idle();
    webhooksOn = false; // only reconciliation can tell
    try {
      bb.faults.hangAfterSend = 1;
      const res = await post("/v1/messages", f.key, { from: f.line.handle, to: fay, text: "did it go?" });
      // While the outcome is unknown, the contact turns out to have no iMessage now: still no SMS before reconciling.
      await vi.waitFor(async () => expect((await get(`/v1/outbox?id=${res.body.id}`, f.key)).body.error).toBeTruthy(), { timeout: 20_000, interval: 100 });
      bb.imessageRegistered = new Set();
      expect(await settled(f.key, res.body.id, 40_000)).toMatchObject({ status: "sent", fallback: false });
      const ours = bb.messages.filter((m) => m.isFromMe && m.text === "did it go?");
      expect(ours).toHaveLength(1);
      expect(bb.requests.filter((r) => r.path === "/api/v1/chat/new")).toHaveLength(0);
      const [m] = await messages(f.key, f.line.handle, fay);
      expect(m).toMatchObject({ text: "did it go?", service: "imessage", fallback: false });
    } finally {
      webhooksOn = true;
    }
  }, 60_000);
});

import { afterAll, describe, expect, it } from "vitest";
import { catchUpLine } from "@/server/services/lines/line-monitor";
import { type FakeBlueBubbles, startFakeBlueBubbles } from "./fakes/bluebubbles";
import { blueBubblesLine, call, db, dispatch, post, phone, runDelivery } from "./helpers";
import { messagesOf } from "./line-flows";

// A provider message with a NUL character (which neither PostgreSQL nor PGlite stores in text
// or jsonb) is stored with each NUL replaced by U+FFFD, through the webhook and through
// catch-up, and one such message never blocks the messages after it or the line's health.

runDelivery();

let webhooksOn = true;
async function deliver(url: string, body: { type: string; data: unknown }): Promise<void> {
  if (webhooksOn) await dispatch(new Request(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }));
}

const fakes: FakeBlueBubbles[] = [];
async function connected() {
  const bb = await startFakeBlueBubbles({ deliver });
  fakes.push(bb);
  const f = await blueBubblesLine(bb);
  return { ...f, bb };
}
afterAll(async () => {
  await Promise.all(fakes.map((f) => f.close()));
});

describe("a provider message containing NUL", () => {
  it("is stored with U+FFFD in place of NUL through the webhook (a contact's and one typed on the Mac), and announced", async () => {
    const f = await connected();
    await post("/v1/webhooks", f.key, { from: f.line.handle, url: "https://example.com/hook", events: ["message.received"] });
    const alice = phone();
    const record = f.bb.receive({ from: alice, text: "nul\u0000here", emit: false });
    const url = new URL(f.bb.webhooks[0]!.url);
    const res = await call("POST", url.pathname + url.search, { body: { type: "new-message", data: record } });
    expect(res.status).toBe(200);
    expect(res.body.received.stored).toBe(1);
    // The Mac's own message takes the other path (not the batched one).
    f.bb.receive({ from: alice, text: "mine\u0000too", isFromMe: true });
    await f.bb.idle();
    const list = await messagesOf(f, alice);
    expect(list.map((m) => [m.text, m.is_from_me])).toEqual([
      ["mine\uFFFDtoo", true],
      ["nul\uFFFDhere", false],
    ]);
    const delivery = await (await db()).webhookDelivery.findFirstOrThrow({ where: { event: "message.received", webhook: { lineId: f.line.id } } });
    expect((delivery.payload as { text: string }).text).toBe("nul\uFFFDhere");
    // The same webhook again is a duplicate, not a second message.
    expect((await call("POST", url.pathname + url.search, { body: { type: "new-message", data: record } })).body.received.duplicate).toBe(1);
  });

  it("never blocks catch-up: the messages after it are taken in and the line stays connected", async () => {
    const f = await connected();
    const alice = phone();
    webhooksOn = false;
    try {
      f.bb.receive({ from: alice, text: "first\u0000" });
      f.bb.receive({ from: alice, text: "second" });
      await f.bb.idle();
    } finally {
      webhooksOn = true;
    }
    const report = await catchUpLine(f.line.id);
    expect(report.error).toBeNull();
    expect(report.counts.stored).toBe(2);
    expect((await messagesOf(f, alice)).map((m) => m.text)).toEqual(["second", "first\uFFFD"]);
    expect((await catchUpLine(f.line.id)).counts).toMatchObject({ stored: 0, duplicate: 2 });
    const line = await (await db()).line.findUniqueOrThrow({ where: { id: f.line.id } });
    expect(line.status).toBe("connected");
  });
});

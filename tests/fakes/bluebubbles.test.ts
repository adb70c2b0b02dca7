import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startFakeBlueBubbles, type FakeBlueBubbles } from "./bluebubbles";

type Hook = { url: string; body: { type: string; data: Record<string, unknown> } };

describe("fake BlueBubbles server", () => {
  let bb: FakeBlueBubbles;
  let hooks: Hook[];

  beforeEach(async () => {
    hooks = [];
    bb = await startFakeBlueBubbles({
      deliver: async (url, body) => {
        hooks.push({ url, body: body as Hook["body"] });
      },
    });
  });
  afterEach(async () => {
    await bb.close();
  });

  const api = (path: string, query: Record<string, string> = {}) => {
    const u = new URL(`${bb.url}/api/v1/${path}`);
    u.searchParams.set("password", bb.password);
    for (const [k, v] of Object.entries(query)) u.searchParams.set(k, v);
    return u.toString();
  };
  const post = (path: string, body: unknown, init: RequestInit = {}) =>
    fetch(api(path), { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body), ...init });
  const registerHook = async (events = ["new-message", "updated-message", "message-send-error"]) => {
    const res = await post("webhook", { url: "http://receiver.test/bb", events });
    expect(res.status).toBe(200);
  };

  it("authenticates by query parameter and 404s unknown routes like Koa", async () => {
    const missing = await fetch(`${bb.url}/api/v1/ping`);
    expect(missing.status).toBe(401);
    expect(await missing.json()).toEqual({
      status: 401,
      message: "You are not authorized to access this resource",
      error: { type: "Authentication Error", message: "Missing server password!" },
    });
    const wrong = await fetch(`${bb.url}/api/v1/ping?password=nope`);
    expect(wrong.status).toBe(401);
    expect(((await wrong.json()) as { error: { message: string } }).error.message).toBe("Unauthorized");
    const ok = await fetch(api("ping"));
    expect(await ok.json()).toEqual({ status: 200, message: "Ping received!", data: "pong" });
    const unknown = await fetch(api("nope/nothing"));
    expect(unknown.status).toBe(404);
    expect(await unknown.text()).toBe("Not Found");
  });

  it("reports server info and gates Private API routes", async () => {
    const info = (await (await fetch(api("server/info"))).json()) as { data: Record<string, unknown> };
    expect(info.data).toMatchObject({ server_version: "1.9.9", os_version: "15.5", private_api: true, helper_connected: true });
    bb.setHelperConnected(false);
    const res = await post("chat/iMessage;-;+15550001111/typing", {});
    expect(res.status).toBe(500);
    expect(await res.json()).toMatchObject({
      message: "Please make sure you have completed the setup for the Private API, and your helper is connected!",
      error: { type: "iMessage Error", message: "iMessage Private API Helper is not connected!" },
    });
  });

  it("sends a text: tempGuid echoed, two new-message webhooks (with and without tempGuid)", async () => {
    await registerHook();
    const res = await post("message/text", { chatGuid: "iMessage;-;+15551234567", tempGuid: "temp-1", message: "hello" });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { message: string; data: Record<string, unknown> };
    expect(body.message).toBe("Message sent!");
    expect(body.data).toMatchObject({ text: "hello", isFromMe: true, tempGuid: "temp-1", error: 0 });
    expect(body.data.guid).toMatch(/^[0-9A-F-]{36}$/);
    expect((body.data.chats as { guid: string }[])[0]?.guid).toBe("iMessage;-;+15551234567");
    expect(hooks.map((h) => [h.body.type, h.body.data.tempGuid])).toEqual([
      ["new-message", "temp-1"],
      ["new-message", undefined],
    ]);
    for (const h of hooks) {
      expect(h.body.data.guid).toBe(body.data.guid);
      expect(h.body.data).not.toHaveProperty("isAudioMessage");
    }
    // the tempGuid is only "queued" while in flight: a concurrent duplicate is refused
    bb.faults.sendDelayMs = 150;
    const [a, b] = await Promise.all([
      post("message/text", { chatGuid: "iMessage;-;+15551234567", tempGuid: "temp-2", message: "x" }),
      new Promise((r) => setTimeout(r, 30)).then(() =>
        post("message/text", { chatGuid: "iMessage;-;+15551234567", tempGuid: "temp-2", message: "x" }),
      ),
    ]);
    expect(a.status).toBe(200);
    expect(b.status).toBe(400);
    expect(((await b.json()) as { error: { message: string } }).error.message).toBe(
      "Message is already queued to be sent! (Temp GUID: temp-2)",
    );
  });

  it("round-trips an attachment through multipart upload and download", async () => {
    const bytes = new Uint8Array(4096).map((_, i) => (i * 7) % 256);
    const form = new FormData();
    form.set("chatGuid", "iMessage;-;+15551234567");
    form.set("name", "data.bin");
    form.set("tempGuid", "temp-att");
    form.set("attachment", new Blob([bytes]), "data.bin");
    const res = await fetch(api("message/attachment"), { method: "POST", body: form });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { message: string; data: { attachments: { guid: string; transferName: string }[] } };
    expect(body.message).toBe("Attachment sent!");
    expect(body.data).not.toHaveProperty("tempGuid");
    const att = body.data.attachments[0]!;
    expect(att.transferName).toBe("data.bin");
    const dl = await fetch(api(`attachment/${encodeURIComponent(att.guid)}/download`, { original: "true" }));
    expect(dl.status).toBe(200);
    expect(new Uint8Array(await dl.arrayBuffer())).toEqual(bytes);
    expect(bb.requests.at(-2)?.body).toMatchObject({ name: "data.bin", attachment: { filename: "data.bin", size: 4096 } });
  });

  it("dedups webhooks by URL and returns the existing row unchanged", async () => {
    const first = (await (await post("webhook", { url: "http://r.test/a", events: ["new-message"] })).json()) as {
      data: { id: number; events: string[] };
    };
    const second = (await (await post("webhook", { url: "http://r.test/a", events: ["*"] })).json()) as {
      data: { id: number; events: string[] };
    };
    expect(second.data).toEqual(first.data);
    expect(second.data.events).toEqual(["new-message"]);
    const bad = await post("webhook", { url: "http://r.test/b", events: ["message"] });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { message: string } }).error.message).toMatch(
      /^Invalid webhook event: message! Webhook must be one of: \*,new-message,/,
    );
    const list = (await (await fetch(api("webhook"))).json()) as { data: unknown[] };
    expect(list.data).toHaveLength(1);
  });

  it("queries messages with after/sort/limit like the real query route", async () => {
    const t0 = Date.now() - 60_000;
    const m1 = bb.receive({ from: "+15557654321", text: "one", dateCreated: t0, emit: false });
    const m2 = bb.receive({ from: "+15557654321", text: "two", dateCreated: t0 + 1000, emit: false });
    const m3 = bb.receive({ from: "+15557654321", text: "three", dateCreated: t0 + 2000, emit: false });
    const q = async (body: unknown) =>
      (await (await post("message/query", body)).json()) as {
        data: { guid: string; chats: unknown[] }[];
        metadata: { total: number; count: number; limit: number; offset: number };
      };
    const asc = await q({ after: t0 + 1000, sort: "ASC", limit: 1 });
    expect(asc.data.map((m) => m.guid)).toEqual([m2.guid]);
    expect(asc.metadata).toEqual({ offset: 0, limit: 1, total: 2, count: 1 });
    expect(asc.data[0]?.chats).toEqual([]);
    const desc = await q({ chatGuid: "iMessage;-;+15557654321" });
    expect(desc.data.map((m) => m.guid)).toEqual([m3.guid, m2.guid, m1.guid]);
    expect(desc.data[0]?.chats).toHaveLength(1);
    expect((await q({ after: String(t0) })).data).toEqual([]); // string `after` matches nothing
    const lower = await post("message/query", { sort: "asc" });
    expect(lower.status).toBe(400);
    const unknownChat = await post("message/query", { chatGuid: "iMessage;-;+19999999999" });
    expect(unknownChat.status).toBe(404);
    expect(await unknownChat.text()).toBe("Not Found");
  });

  it("hangAfterSend: the message is created although the response never comes", async () => {
    await registerHook();
    bb.faults.hangAfterSend = 1;
    await expect(
      post(
        "message/text",
        { chatGuid: "iMessage;-;+15551234567", tempGuid: "temp-hang", message: "lost reply" },
        { signal: AbortSignal.timeout(300) },
      ),
    ).rejects.toThrow();
    expect(bb.messages.some((m) => m.text === "lost reply" && m.isFromMe)).toBe(true);
    expect(hooks.some((h) => h.body.data.tempGuid === "temp-hang")).toBe(true);
  });

  it("failNext not-registered answers 500 iMessage Error with data.error 22", async () => {
    await registerHook();
    bb.faults.failNext.push("not-registered");
    const res = await post("message/text", { chatGuid: "iMessage;-;+15550009999", tempGuid: "temp-nr", message: "hi" });
    expect(res.status).toBe(500);
    const body = (await res.json()) as { status: number; message: string; error: { type: string }; data: Record<string, unknown> };
    expect(body.status).toBe(500);
    expect(body.error.type).toBe("iMessage Error");
    expect(body.data).toMatchObject({ error: 22, tempGuid: "temp-nr", isFromMe: true });
    expect(hooks.map((h) => h.body.type)).toContain("message-send-error");
  });

  it("keeps state and port across close/restart", async () => {
    const rec = bb.receive({ from: "+15551112222", text: "persist", emit: false });
    const url = bb.url;
    await bb.close();
    await expect(fetch(api("ping"))).rejects.toThrow();
    await bb.restart();
    expect(bb.url).toBe(url);
    const res = await fetch(api(`message/${rec.guid}`));
    expect(res.status).toBe(200);
    expect(((await res.json()) as { data: { text: string } }).data.text).toBe("persist");
    await bb.markDelivered(rec.guid);
    expect(hooks).toEqual([]); // no webhook registered
    expect(bb.emitted.at(-1)?.type).toBe("updated-message");
    expect(bb.emitted.at(-1)?.data).not.toHaveProperty("chats");
  });
});

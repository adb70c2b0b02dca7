import { describe, expect, it } from "vitest";
import { get, makeAccount, phone, post } from "./helpers";

const q = encodeURIComponent;

describe("sandbox activation", () => {
  it("missing -> pending with a code -> active when the phone texts the code", async () => {
    const f = await makeAccount();
    const missing = await get("/v1/sandbox", f.key);
    expect(missing.status).toBe(200);
    expect(missing.body).toMatchObject({
      status: "missing",
      activation_code: null,
      sandbox_line_handle: "+15555550100",
      contact_identifier: null,
      activated_at: null,
      usage: { used: 0, limit: 50, remaining: 50, resets_at: expect.any(Number) },
    });
    const resetsAt = new Date(missing.body.usage.resets_at);
    expect(resetsAt.getUTCHours()).toBe(0);
    expect(resetsAt.getUTCMinutes()).toBe(0);

    const started = await post("/v1/sandbox", f.key);
    expect(started.status).toBe(200);
    expect(started.body.status).toBe("pending");
    const code: string = started.body.activation_code;
    expect(code).toMatch(/^RELAY-[A-Z0-9]{8}$/);
    expect((await post("/v1/sandbox", f.key)).body.activation_code).toBe(code);

    const sandbox = started.body.sandbox_line_handle;
    const blocked = await get(`/v1/chats?from=${q(sandbox)}`, f.key);
    expect(blocked.status).toBe(403);
    expect(blocked.body.error.code).toBe("sandbox_not_activated");

    const myPhone = phone();
    const wrongText = await post("/api/simulator/messages", f.key, { line: sandbox, from: myPhone, text: "hello?" });
    expect(wrongText.status).toBe(403);
    expect(wrongText.body.error.code).toBe("sandbox_not_activated");

    const pairing = await post("/api/simulator/messages", f.key, { line: sandbox, from: myPhone, text: ` ${code.toLowerCase()} ` });
    expect(pairing.status).toBe(201);
    const active = await get("/v1/sandbox", f.key);
    expect(active.body).toMatchObject({ status: "active", contact_identifier: myPhone, activated_at: expect.any(Number) });

    const chats = await get(`/v1/chats?from=${q(sandbox)}`, f.key);
    expect(chats.status).toBe(200);
    expect(chats.body.data).toHaveLength(1);
    expect(chats.body.data[0]).toMatchObject({ identifier: myPhone, has_received_inbound: true });

    const again = await post("/api/simulator/messages", f.key, { line: sandbox, from: myPhone, text: "now I can talk" });
    expect(again.status).toBe(201);
    const stranger = await post("/api/simulator/messages", f.key, { line: sandbox, from: phone(), text: "me too?" });
    expect(stranger.status).toBe(400);
    expect(stranger.body.error).toMatchObject({ code: "sandbox_contact_mismatch", param: "from" });
  });

  it("sandbox chats are per account: another account sees none of them", async () => {
    const a = await makeAccount();
    const b = await makeAccount();
    const code = (await post("/v1/sandbox", a.key)).body.activation_code;
    const sandbox = (await get("/v1/sandbox", a.key)).body.sandbox_line_handle;
    const aPhone = phone();
    await post("/api/simulator/messages", a.key, { line: sandbox, from: aPhone, text: code });
    const bCode = (await post("/v1/sandbox", b.key)).body.activation_code;
    // B cannot use A's code through the simulator, nor write as A's paired phone.
    const steal = await post("/api/simulator/messages", b.key, { line: sandbox, from: phone(), text: code });
    expect(steal.status).toBe(403);
    const bPhone = phone();
    expect((await post("/api/simulator/messages", b.key, { line: sandbox, from: bPhone, text: bCode })).status).toBe(201);
    const bChats = await get(`/v1/chats?from=${q(sandbox)}`, b.key);
    expect(bChats.body.data.map((c: { identifier: string }) => c.identifier)).toEqual([bPhone]);
    const aMessages = await get(`/v1/messages?from=${q(sandbox)}`, a.key);
    expect(aMessages.body.data.map((m: { sender: string }) => m.sender)).toEqual([aPhone]);
  });

  it("an account without an owner cannot start activation", async () => {
    const f = await makeAccount({ noOwner: true });
    const res = await post("/v1/sandbox", f.key);
    expect(res.status).toBe(403);
    expect(res.body.error).toMatchObject({ type: "authorization_error", code: "sandbox_requires_owner" });
    const lines = await get("/v1/lines", f.key);
    expect(lines.body.data.some((l: { is_sandbox: boolean }) => l.is_sandbox)).toBe(false);
  });
});

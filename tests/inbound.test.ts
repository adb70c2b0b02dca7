import { describe, expect, it } from "vitest";
import { call, get, inbound, makeAccount, phone, post } from "./helpers";

const q = encodeURIComponent;
const b64 = (s: string | Buffer) => Buffer.from(s).toString("base64");

describe("inbound traffic through the simulated platform", () => {
  it("stores a text message and creates the chat with has_received_inbound", async () => {
    const f = await makeAccount();
    const alice = phone();
    const before = Date.now();
    const m = await inbound(f, alice, "Hello there");
    expect(m).toEqual({
      object: "message",
      id: expect.stringMatching(/^msg_/),
      line_id: f.line.id,
      chat_id: expect.stringMatching(/^cht_/),
      guid: expect.any(String),
      sender: alice,
      text: "Hello there",
      attachments: [],
      is_from_me: false,
      is_audio_message: null,
      service: "imessage",
      outbox_id: null,
      sent_at: expect.any(Number),
      synced_at: expect.any(Number),
      reply_to_guid: null,
      delivery_status: null,
      delivered_at: null,
      delivery_error: null,
      fallback: false,
      request_id: expect.stringMatching(/^req_/),
    });
    expect(m.sent_at).toBeGreaterThanOrEqual(before);
    const chats = await get(`/v1/chats?from=${q(f.line.handle)}`, f.key);
    expect(chats.body.data[0]).toMatchObject({ id: m.chat_id, identifier: alice, has_received_inbound: true, last_message_at: m.sent_at });
  });

  it("normalizes phone numbers so formatting variants land in one chat", async () => {
    const f = await makeAccount();
    const a = await inbound(f, "+1 (555) 010-2000", "one");
    const b = await inbound(f, "+15550102000", "two");
    expect(b.chat_id).toBe(a.chat_id);
    expect(a.sender).toBe("+15550102000");
  });

  it("stores one attachment, downloadable through an expiring signed URL", async () => {
    const f = await makeAccount();
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 1, 2, 3, 4]);
    const m = await inbound(f, phone(), null as unknown as string, {
      attachment: { filename: "photo.png", mime_type: "image/png", content_base64: b64(png) },
    });
    expect(m.text).toBeNull();
    expect(m.attachments).toHaveLength(1);
    const att = m.attachments[0];
    expect(att).toMatchObject({ filename: "photo.png", mime_type: "image/png", size: 8, transcription: null });
    expect(att.url).toMatch(/^http:\/\/localhost:3000\/api\/files\/file_[0-9a-z]+\?expires=\d+&signature=/);
    const url = new URL(att.url);
    const { GET } = await import("@/app/api/files/[id]/route");
    const ok = await GET(new Request(url), { params: Promise.resolve({ id: url.pathname.split("/").pop()! }) });
    expect(ok.status).toBe(200);
    expect(ok.headers.get("content-type")).toBe("image/png");
    expect(Buffer.from(await ok.arrayBuffer())).toEqual(png);

    const tampered = new URL(att.url);
    const signature = tampered.searchParams.get("signature")!;
    tampered.searchParams.set("signature", (signature[0] === "A" ? "B" : "A") + signature.slice(1));
    const bad = await call("GET", tampered.pathname + tampered.search);
    expect(bad.status).toBe(404);
    expect(bad.body.error.code).toBe("file_not_found");
    const expired = new URL(att.url);
    expired.searchParams.set("expires", "1000");
    expect((await call("GET", expired.pathname + expired.search)).status).toBe(404);
  });

  it("voice memos: is_audio_message true, text null, audio attachment with transcription", async () => {
    const f = await makeAccount();
    const m = await inbound(f, phone(), null as unknown as string, {
      is_audio_message: true,
      transcription: "call me back",
      attachment: { filename: "Audio Message.caf", mime_type: "audio/x-caf", content_base64: b64("caf-bytes") },
    });
    expect(m.is_audio_message).toBe(true);
    expect(m.text).toBeNull();
    expect(m.attachments[0]).toMatchObject({ mime_type: "audio/x-caf", transcription: "call me back" });

    const pending = await inbound(f, phone(), null as unknown as string, {
      is_audio_message: true,
      attachment: { filename: "Audio Message.caf", mime_type: "audio/x-caf", content_base64: b64("caf") },
    });
    expect(pending.attachments[0].transcription).toBeNull();
  });

  it("plain audio files: is_audio_message false and transcription null", async () => {
    const f = await makeAccount();
    const m = await inbound(f, phone(), null as unknown as string, {
      transcription: "ignored for non-memos",
      attachment: { filename: "song.mp3", mime_type: "audio/mpeg", content_base64: b64("ID3...") },
    });
    expect(m.is_audio_message).toBe(false);
    expect(m.attachments[0].transcription).toBeNull();
  });

  it("a voice memo without an audio attachment is refused", async () => {
    const f = await makeAccount();
    const res = await post("/api/simulator/messages", f.key, { line: f.line.handle, from: phone(), is_audio_message: true, text: "x" });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: "invalid_parameter_value", param: "attachment" });
  });

  it("replies carry reply_to_guid of the parent", async () => {
    const f = await makeAccount();
    const alice = phone();
    const parent = await inbound(f, alice, "parent");
    const reply = await inbound(f, alice, "reply", { reply_to_guid: parent.guid });
    expect(reply.reply_to_guid).toBe(parent.guid);
  });

  it("group chats: one chat per participant set, with name and participants", async () => {
    const f = await makeAccount();
    const [alice, bob, carol] = [phone(), phone(), phone()];
    const first = await inbound(f, alice, "hi all", { group: { participants: [bob, carol], name: "Trip" } });
    const second = await inbound(f, bob, "hey", { group: { participants: [alice, carol] } });
    expect(second.chat_id).toBe(first.chat_id);
    const chats = await get(`/v1/chats?from=${q(f.line.handle)}`, f.key);
    const group = chats.body.data.find((c: { id: string }) => c.id === first.chat_id);
    expect(group).toMatchObject({ is_group: true, name: "Trip", has_received_inbound: true });
    expect([...group.participants].sort()).toEqual([alice, bob, carol].sort());
    const direct = await inbound(f, alice, "just you");
    expect(direct.chat_id).not.toBe(first.chat_id);
  });

  it("re-ingesting a platform GUID is idempotent", async () => {
    const f = await makeAccount();
    const a = await inbound(f, phone(), "once", { guid: "GUID-ONCE-1" });
    const b = await inbound(f, phone(), "twice", { guid: "GUID-ONCE-1" });
    expect(b.id).toBe(a.id);
    expect(b.text).toBe("once");
  });

  it("requires text or an attachment, and rejects bad base64 and oversized text", async () => {
    const f = await makeAccount();
    const empty = await post("/api/simulator/messages", f.key, { line: f.line.handle, from: phone() });
    expect(empty.status).toBe(400);
    expect(empty.body.error.code).toBe("missing_required_parameter");
    const bad = await post("/api/simulator/messages", f.key, {
      line: f.line.handle,
      from: phone(),
      attachment: { filename: "x", mime_type: "image/png", content_base64: "***" },
    });
    expect(bad.body.error).toMatchObject({ code: "invalid_parameter_value", param: "attachment.content_base64" });
    const huge = await post("/api/simulator/messages", f.key, { line: f.line.handle, from: phone(), text: "x".repeat(20_001) });
    expect(huge.body.error).toMatchObject({ code: "invalid_parameter_value", param: "text" });
  });

  it("reactions need an existing message on the line", async () => {
    const f = await makeAccount();
    const res = await post("/api/simulator/reactions", f.key, { line: f.line.handle, from: phone(), message_id: "NO-SUCH-GUID", type: "like", added: true });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe("message_not_found");
  });
});

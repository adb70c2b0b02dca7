import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resetConfig } from "@/server/kernel/config";
import { type DeliveredAnswer, type FakeTwilio, startFakeTwilio } from "./fakes/twilio";
import { call, db, dispatch, fakeTwilioLine, get, phone } from "./helpers";
import { messagesOf } from "./line-flows";

// Media a provider sends, against the account's storage quota (ACCOUNT_STORAGE_QUOTA_MB): past
// it the message is kept with a note naming the attachment, nothing is downloaded or stored,
// and the line says why; once the account is under its quota again, media is stored and the
// warning lifted. Through a Twilio line (the fake serves its own media: a test double).

async function deliver(url: string, init: { body: string; headers: Record<string, string> }): Promise<DeliveredAnswer> {
  const res = await dispatch(new Request(url, { method: "POST", headers: init.headers, body: init.body }));
  return { status: res.status, contentType: res.headers.get("content-type"), body: await res.text() };
}

let tw: FakeTwilio;
beforeAll(async () => {
  process.env.PROVIDER_MEDIA_FROM_BASE_URL = "true";
  process.env.ACCOUNT_STORAGE_QUOTA_MB = "1";
  resetConfig();
  tw = await startFakeTwilio({ deliver, numbers: [phone()] });
});
afterAll(async () => {
  delete process.env.PROVIDER_MEDIA_FROM_BASE_URL;
  delete process.env.ACCOUNT_STORAGE_QUOTA_MB;
  resetConfig();
  await tw.close();
});

describe("the account's storage quota for received media", () => {
  it("past it keeps the message with a note and warns on the line; under it again, media is stored and the warning goes", async () => {
    const f = await fakeTwilioLine(tw);
    const lineOf = async () => ((await get("/v1/lines", f.key)).body.data as { id: string; status: string; status_reason: string | null }[]).find((l) => l.id === f.line.id)!;
    expect((await lineOf()).status).toBe("connected");
    // One MiB uploaded: the account's 1 MB is used up.
    const upload = await call("POST", "/v1/files", { key: f.key, raw: new Uint8Array(1024 * 1024), headers: { "content-type": "application/pdf", "x-filename": "big.pdf" } });
    expect(upload.status).toBe(201);
    const files = async () => (await db()).file.count({ where: { accountId: f.accountId } });
    expect(await files()).toBe(1);

    const alice = phone();
    const mediaRequests = () => tw.requests.filter((r) => r.path.includes("/Media/")).length;
    const before = mediaRequests();
    const refused = await tw.receive({ from: alice, body: "a photo", media: [{ contentType: "image/jpeg", bytes: new Uint8Array(2000).fill(7) }] });
    expect(refused.answer?.status).toBe(200);
    const [kept] = await messagesOf(f, alice);
    expect(kept).toMatchObject({ guid: refused.message.sid, attachments: [] });
    expect(kept!.text).toBe(`a photo\n[attachment ${refused.message.media[0]!.sid}.jpg (image/jpeg) not stored: the account's storage quota is used up]`);
    expect(mediaRequests()).toBe(before);
    expect(await files()).toBe(1);
    const warned = await lineOf();
    expect(warned.status).toBe("degraded");
    expect(warned.status_reason).toContain("storage quota of 1 MB (ACCOUNT_STORAGE_QUOTA_MB)");

    process.env.ACCOUNT_STORAGE_QUOTA_MB = "2";
    resetConfig();
    const stored = await tw.receive({ from: alice, body: "another", media: [{ contentType: "image/png", bytes: new Uint8Array(3000).fill(9) }] });
    expect(stored.answer?.status).toBe(200);
    const latest = (await messagesOf(f, alice)).find((m) => m.guid === stored.message.sid);
    expect(latest).toMatchObject({ text: "another", attachments: [expect.objectContaining({ mime_type: "image/png", size: 3000 })] });
    expect(await files()).toBe(2);
    expect(await lineOf()).toMatchObject({ status: "connected", status_reason: null });
  });
});

import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { config } from "@/server/kernel/config";
import { getDb } from "@/server/db";
import { s3Storage } from "@/server/storage/s3";
import { catchUpLine } from "@/server/services/lines/line-monitor";
import { storage } from "@/server/storage";
import { startFakeBlueBubbles } from "./fakes/bluebubbles";
import { captureLog } from "./log-capture";
import { blueBubblesLine, call, dispatch, expectRequestId, makeAccount, phone } from "./helpers";
import { startS3, useStorageEnv, type S3Server } from "./s3";

// POST /v1/files and the signed download link with STORAGE_URL naming an S3 bucket (s3rver):
// the bytes go to the bucket and come back exact through the service; with the bucket's server
// down, both answer 503 storage_unavailable with a request_id, and no File row is written.

let s3: S3Server;
let restoreEnv: () => void;

beforeAll(async () => {
  s3 = await startS3();
  restoreEnv = useStorageEnv(s3.env);
});

afterAll(async () => {
  restoreEnv();
  await s3.stop();
});

const upload = (key: string, bytes: Uint8Array) => call("POST", "/v1/files", { key, raw: bytes, headers: { "content-type": "application/pdf", "x-filename": "report.pdf" } });

describe("files on S3", () => {
  let accountId: string;
  let apiKey: string;
  let stored: { url: string; bytes: Buffer };

  it("POST /v1/files streams the upload into the bucket; the signed link streams the exact bytes back", async () => {
    const f = await makeAccount();
    ({ accountId, key: apiKey } = f);
    const bytes = randomBytes(9 * 1024 * 1024 + 7); // two parts
    const res = await upload(apiKey, bytes);
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ object: "file", size: bytes.length, mime_type: "application/pdf" });
    stored = { url: res.body.url, bytes };

    const db = await getDb();
    const row = await db.file.findUniqueOrThrow({ where: { id: res.body.id } });
    const location = config().storage;
    if (location.kind !== "s3") throw new Error("STORAGE_URL is not in effect");
    const inBucket = await s3Storage(location).open(row.storageKey);
    expect(inBucket?.size).toBe(bytes.length);
    inBucket?.stream.destroy();

    const download = await dispatch(new Request(res.body.url));
    expect(download.status).toBe(200);
    expect(download.headers.get("content-length")).toBe(String(bytes.length));
    expect(download.headers.get("content-type")).toBe("application/pdf");
    expect(Buffer.from(await download.arrayBuffer()).equals(bytes)).toBe(true);
  });

  it("with the bucket's server down, uploads and downloads answer 503 storage_unavailable with a request_id, and no File is created", async () => {
    await s3.stop();
    const db = await getDb();
    const before = await db.file.count({ where: { accountId } });

    const { result: res, records } = await captureLog(() => upload(apiKey, randomBytes(1000)));
    expect(res.status).toBe(503);
    expect(res.body.error).toMatchObject({ type: "api_error", code: "storage_unavailable" });
    expectRequestId(res);
    expect(await db.file.count({ where: { accountId } })).toBe(before);

    const download = await dispatch(new Request(stored.url));
    expect(download.status).toBe(503);
    const body = await download.json();
    expect(body).toMatchObject({ error: { code: "storage_unavailable" }, request_id: expect.stringMatching(/^req_/) });
    expect(records).toContainEqual(
      expect.objectContaining({ level: 40, msg: "file storage (STORAGE_URL) failed", reason: expect.stringMatching(/^bucket "relay-test" at .* is unreachable/) }),
    );
  });

  it("a provider message whose attachment cannot be stored is refused with 503, and taken in once the bucket is back", async () => {
    const answers: number[] = [];
    const bb = await startFakeBlueBubbles({
      deliver: async (url, body) => {
        const res = await dispatch(new Request(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }));
        answers.push(res.status);
      },
    });
    try {
      const f = await blueBubblesLine(bb);
      const alice = phone();
      const bytes = randomBytes(50_000);
      bb.receive({ from: alice, text: "with a photo", attachment: { name: "photo.png", mimeType: "image/png", bytes } });
      await bb.idle();
      expect(answers.at(-1)).toBe(503); // the bucket is down: refused, so BlueBubbles' copy stays the one to take in
      const db = await getDb();
      expect(await db.message.count({ where: { lineId: f.line.id } })).toBe(0);

      // The bucket is back (same server, same port): catch-up takes the message in, with its file.
      const port = Number(new URL(s3.endpoint).port);
      s3 = await startS3({ port });
      await catchUpLine(f.line.id);
      const messages = await db.message.findMany({ where: { lineId: f.line.id }, include: { attachments: { include: { file: true } } } });
      expect(messages).toHaveLength(1);
      expect(messages[0]!.text).toBe("with a photo");
      const blob = await storage().open(messages[0]!.attachments[0]!.file.storageKey);
      const chunks: Buffer[] = [];
      for await (const c of blob!.stream) chunks.push(c as Buffer);
      expect(Buffer.concat(chunks).equals(bytes)).toBe(true);
    } finally {
      await bb.close();
    }
  });
});

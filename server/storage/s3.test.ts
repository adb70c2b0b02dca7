import { randomBytes } from "node:crypto";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { createServer, type Server, type Socket } from "node:net";
import os from "node:os";
import path from "node:path";
import { buffer } from "node:stream/consumers";
import { pathToFileURL } from "node:url";
import { AbortMultipartUploadCommand, S3Client, UploadPartCommand } from "@aws-sdk/client-s3";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { startS3, useStorageEnv, type S3Server } from "@/tests/s3";
import { captureLog } from "@/tests/log-capture";
import { config, parseConfig } from "../kernel/config";
import { checkStorage, storage } from "./index";
import { storeBlob } from "./blobs";

// The S3 store against s3rver: exact bytes back (streamed uploads included), nothing left by a
// failed upload, and checkStorage's one-line diagnosis of what is wrong with STORAGE_URL.

let s3: S3Server;
let restoreEnv: () => void;

/** `total` random bytes, and a source yielding them in uneven chunks (as a request body arrives). */
function randomSource(total: number) {
  const bytes = randomBytes(total);
  async function* chunks(onChunk?: (sent: number) => void) {
    for (let at = 0; at < total; ) {
      const size = 1 + Math.floor(Math.random() * 256 * 1024);
      yield bytes.subarray(at, at + size);
      at += size;
      onChunk?.(at);
    }
  }
  return { bytes, chunks };
}

const read = async (key: string) => {
  const blob = await storage().open(key);
  return blob && { size: blob.size, bytes: await buffer(blob.stream) };
};

beforeAll(async () => {
  s3 = await startS3();
  restoreEnv = useStorageEnv(s3.env);
});

afterEach(() => {
  vi.restoreAllMocks();
  useStorageEnv(s3.env);
});

afterAll(async () => {
  restoreEnv();
  await s3.stop();
});

describe("the S3 store", () => {
  it("is the store STORAGE_URL names, with the region and path style given", () => {
    expect(config().storage).toEqual({ kind: "s3", bucket: "relay-test", endpoint: s3.endpoint, region: "us-east-1", pathStyle: true });
  });

  it("stores bytes and gives back exactly them; a missing key opens as null; delete removes, and ignores missing keys", async () => {
    const bytes = randomBytes(1000);
    await storage().put("ab/small", bytes);
    expect(await read("ab/small")).toEqual({ size: 1000, bytes });
    expect(await storage().open("ab/never-written")).toBeNull();
    await storage().delete("ab/small");
    expect(await storage().open("ab/small")).toBeNull();
    await storage().delete("ab/small");
    await storage().delete("ab/never-written");
  });

  it("streams a multi-part upload: parts go out while the source is still being read, and the bytes come back exact", async () => {
    const total = 20 * 1024 * 1024 + 12_345; // three 8 MiB parts, the last one short
    const { bytes, chunks } = randomSource(total);
    const send = vi.spyOn(S3Client.prototype, "send");
    const partsSent = () => send.mock.calls.filter(([command]) => command instanceof UploadPartCommand).length;
    let partsSentBeforeEnd = 0;
    await storage().put("ab/large", chunks((at) => at >= total && (partsSentBeforeEnd = partsSent())));
    expect(partsSentBeforeEnd).toBeGreaterThanOrEqual(1);
    expect(partsSent()).toBe(3);
    const back = await read("ab/large");
    expect(back?.size).toBe(total);
    expect(back?.bytes.equals(bytes)).toBe(true);
  });

  it("a source that throws midway leaves nothing under the key, aborts the upload, and its own error is what put throws", async () => {
    const { chunks } = randomSource(12 * 1024 * 1024);
    const failure = new Error("connection lost");
    async function* failing() {
      yield* chunks(); // one part sent, a multipart upload open
      throw failure;
    }
    const send = vi.spyOn(S3Client.prototype, "send");
    // s3rver does not implement AbortMultipartUpload: its error must not replace the source's.
    await expect(storage().put("ab/failed", failing())).rejects.toBe(failure);
    expect(send.mock.calls.some(([command]) => command instanceof AbortMultipartUploadCommand)).toBe(true);
    expect(await storage().open("ab/failed")).toBeNull();

    // A single-part upload, and storeBlob's own limit, alike: file_too_large passes through untouched.
    await expect(storeBlob(randomSource(3000).chunks(), 2000)).rejects.toMatchObject({ code: "file_too_large", status: 413 });
  });

  it("answers 503 storage_unavailable for an unreachable server, a missing bucket or refused credentials, and logs why", async () => {
    const unavailable = { code: "storage_unavailable", status: 503 };
    const { records } = await captureLog(async () => {
      useStorageEnv({ STORAGE_URL: s3.url.replace(s3.endpoint, await closedEndpoint()) });
      await expect(storage().put("ab/x", randomBytes(10))).rejects.toMatchObject(unavailable);
      await expect(storage().open("ab/x")).rejects.toMatchObject(unavailable);
      useStorageEnv({ STORAGE_URL: s3.url.replace("relay-test", "no-such-bucket") });
      await expect(storage().put("ab/x", randomSource(100).chunks())).rejects.toMatchObject(unavailable);
      await expect(storage().open("ab/x")).rejects.toMatchObject(unavailable);
      useStorageEnv({ AWS_ACCESS_KEY_ID: "NOT-S3RVER" });
      await expect(storage().put("ab/x", randomBytes(10))).rejects.toMatchObject(unavailable);
    });
    const reasons = records.filter((r) => r.msg === "file storage (STORAGE_URL) failed").map((r) => String(r.reason));
    expect(reasons).toEqual(expect.arrayContaining([expect.stringMatching(/unreachable/), expect.stringMatching(/does not exist/), expect.stringMatching(/access denied/)]));
  });
});

/** A loopback port nothing listens on. */
async function closedEndpoint(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
}

describe("checkStorage", () => {
  /** checkStorage's error message, which must be one line naming STORAGE_URL. */
  async function failure(): Promise<string> {
    const err = await checkStorage({ timeoutMs: 5_000 }).then(() => null, (e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    const message = (err as Error).message;
    expect(message).toMatch(/^STORAGE_URL: /);
    expect(message).not.toContain("\n");
    return message;
  }

  it("passes against a working bucket, and leaves no probe object behind", async () => {
    const send = vi.spyOn(S3Client.prototype, "send");
    await checkStorage();
    const keys = send.mock.calls.map(([command]) => (command.input as { Key?: string }).Key);
    expect(keys[0]).toMatch(/^_health\/[0-9a-f]{16}$/);
    expect(await storage().open(keys[0]!)).toBeNull();
  });

  it("checks a local directory too: passes on a writable one, names one that cannot be written", async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), "relay-storage-"));
    try {
      useStorageEnv({ STORAGE_URL: pathToFileURL(root).href });
      await checkStorage();
      expect(await readdir(path.join(root, "_health"))).toEqual([]);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
    useStorageEnv({ STORAGE_URL: "file:///dev/null/files" });
    expect(await failure()).toMatch(/^STORAGE_URL: local directory \/dev\/null\/files: ENOTDIR/);
  });

  it("names an unreachable endpoint", async () => {
    const endpoint = await closedEndpoint();
    useStorageEnv({ STORAGE_URL: s3.url.replace(s3.endpoint, endpoint) });
    expect(await failure()).toBe(`STORAGE_URL: bucket "relay-test" at ${endpoint} is unreachable (connect ECONNREFUSED ${endpoint.slice(7)})`);
  });

  it("names a missing bucket", async () => {
    useStorageEnv({ STORAGE_URL: s3.url.replace("relay-test", "no-such-bucket") });
    expect(await failure()).toBe(`STORAGE_URL: bucket "no-such-bucket" at ${s3.endpoint} does not exist`);
  });

  it("names refused credentials (s3rver checks the access key ID; it does not verify signatures, so a wrong secret passes there)", async () => {
    useStorageEnv({ AWS_ACCESS_KEY_ID: "NOT-S3RVER" });
    expect(await failure()).toBe(
      `STORAGE_URL: access denied to bucket "relay-test" at ${s3.endpoint} (check AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY): InvalidAccessKeyId`,
    );
  });

  it("gives up on a server that accepts connections but never answers", async () => {
    const sockets = new Set<Socket>();
    const silent: Server = createServer((socket) => sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const endpoint = `http://127.0.0.1:${(silent.address() as { port: number }).port}`;
    try {
      useStorageEnv({ STORAGE_URL: s3.url.replace(s3.endpoint, endpoint) });
      const started = Date.now();
      const err = await checkStorage({ timeoutMs: 1_000 }).then(() => null, (e: unknown) => e as Error);
      expect(err?.message).toBe(`STORAGE_URL: bucket "relay-test" at ${endpoint}: did not answer within 1 s`);
      expect(Date.now() - started).toBeLessThan(3_000);
    } finally {
      for (const socket of sockets) socket.destroy();
      silent.close();
    }
  });
});

describe("STORAGE_URL", () => {
  const parse = (STORAGE_URL: string, env: Record<string, string> = {}) => parseConfig({ STORAGE_URL, ...env }).storage;
  const refusal = (STORAGE_URL: string) => {
    try {
      parseConfig({ STORAGE_URL });
    } catch (err) {
      return (err as Error).message;
    }
    throw new Error(`${STORAGE_URL} was accepted`);
  };

  it("unset or empty: DATA_DIR/files, or memory for DATA_DIR=:memory:", () => {
    expect(parseConfig({ DATA_DIR: "/srv/relay" }).storage).toEqual({ kind: "local", root: "/srv/relay/files" });
    expect(parseConfig({ DATA_DIR: "/srv/relay", STORAGE_URL: "" }).storage).toEqual({ kind: "local", root: "/srv/relay/files" });
    expect(parseConfig({ DATA_DIR: ":memory:" }).storage).toEqual({ kind: "memory" });
  });

  it("parses s3:// URLs: endpoint and path_style optional; region from the URL, else AWS_REGION / AWS_DEFAULT_REGION, else us-east-1", () => {
    expect(parse("s3://my-bucket")).toEqual({ kind: "s3", bucket: "my-bucket", endpoint: undefined, region: "us-east-1", pathStyle: false });
    expect(parse("s3://my-bucket/?region=eu-west-1")).toMatchObject({ region: "eu-west-1" });
    expect(parse("s3://my-bucket", { AWS_REGION: "ap-south-1", AWS_DEFAULT_REGION: "eu-north-1" })).toMatchObject({ region: "ap-south-1" });
    expect(parse("s3://my-bucket", { AWS_DEFAULT_REGION: "eu-north-1" })).toMatchObject({ region: "eu-north-1" });
    expect(parse("s3://files.example.com?region=eu-west-1", { AWS_REGION: "ap-south-1" })).toMatchObject({ bucket: "files.example.com", region: "eu-west-1" });
    expect(parse("s3://media?endpoint=http://minio:9000/&path_style=true&region=us-east-1")).toEqual({
      kind: "s3",
      bucket: "media",
      endpoint: "http://minio:9000",
      region: "us-east-1",
      pathStyle: true,
    });
    expect(parse(`s3://media?endpoint=${encodeURIComponent("https://s3.example.net")}&path_style=false`)).toMatchObject({ endpoint: "https://s3.example.net", pathStyle: false });
    expect(parse("file:///var/lib/relay/files")).toEqual({ kind: "local", root: "/var/lib/relay/files" });
  });

  it("refuses bad values with a message naming STORAGE_URL", () => {
    const cases: [string, RegExp][] = [
      ["https://my-bucket.s3.amazonaws.com", /must be s3:\/\/<bucket>/],
      ["gs://my-bucket", /must be s3:\/\/<bucket>/],
      ["my-bucket", /must be s3:\/\/<bucket>/],
      ["file://relative/path", /must be s3:\/\/<bucket>/],
      ["s3://", /names no bucket/],
      ["s3://?region=eu-west-1", /names no bucket/],
      ["s3://My_Bucket", /"My_Bucket" is not a valid S3 bucket name/],
      ["s3://ab", /not a valid S3 bucket name/],
      ["s3://bad..name", /not a valid S3 bucket name/],
      ["s3://192.168.0.1", /not a valid S3 bucket name/],
      ["s3://key:secret@my-bucket", /credentials come from AWS_ACCESS_KEY_ID/],
      ["s3://my-bucket:9000", /nothing else/],
      ["s3://my-bucket/some/prefix", /nothing else/],
      ["s3://my-bucket?endpoint=minio:9000", /endpoint must be an http:\/\/ or https:\/\/ URL/],
      ["s3://my-bucket?endpoint=not%20a%20url", /endpoint must be an http:\/\/ or https:\/\/ URL/],
      ["s3://my-bucket?endpoint=ftp://minio", /endpoint must be an http:\/\/ or https:\/\/ URL/],
      ["s3://my-bucket?pathstyle=true", /unknown parameter "pathstyle" \(expected endpoint, region, path_style\)/],
      ["s3://my-bucket?path_style=yes", /path_style must be true or false/],
      ["s3://my-bucket?region=EU%20West", /region must be a region name/],
      ["s3://my-bucket?region=eu-west-1&region=us-east-1", /"region" is given twice/],
    ];
    for (const [value, reason] of cases) {
      const message = refusal(value);
      expect(message, value).toMatch(/^Invalid environment configuration:\n {2}STORAGE_URL: /);
      expect(message, value).toMatch(reason);
    }
  });
});

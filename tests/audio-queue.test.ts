import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { checkFfmpeg, setConversionLimitsForTests } from "@/server/audio/ffmpeg";
import { resetConfig } from "@/server/kernel/config";
import { storage } from "@/server/storage";
import { call, inbound, makeAccount, phone, post } from "./helpers";

// The conversion queue of POST /v1/audio-messages, with stand-ins for ffmpeg and ffprobe that
// take a set time and then reject the input (400), so that the test controls how long each
// conversion holds its slot without needing a real ffmpeg.

let tools = "";
const setDelay = (seconds: number) => writeFile(path.join(tools, "delay"), String(seconds));

beforeAll(async () => {
  tools = await mkdtemp(path.join(os.tmpdir(), "audio-queue-"));
  const ffmpeg = ["#!/bin/sh", 'case "$*" in *-encoders*) echo " A....D libopus  libopus Opus"; exit 0;; esac', "exit 1"];
  const ffprobe = [
    "#!/bin/sh",
    'case "$*" in *-version*) echo "ffprobe version stand-in"; exit 0;; esac',
    'for last in "$@"; do :; done', // the input file is the last argument
    `wc -c < "$last" >> '${tools}/sizes'`,
    `sleep "$(cat '${tools}/delay')"`,
    'echo "input: not audio" >&2',
    "exit 1",
  ];
  await writeFile(path.join(tools, "ffmpeg"), ffmpeg.join("\n") + "\n", { mode: 0o755 });
  await writeFile(path.join(tools, "ffprobe"), ffprobe.join("\n") + "\n", { mode: 0o755 });
  await setDelay(0);
  process.env.FFMPEG_PATH = path.join(tools, "ffmpeg");
  resetConfig();
  expect(await checkFfmpeg()).toMatchObject({ ok: true });
});

afterEach(() => {
  setConversionLimitsForTests(null);
  vi.restoreAllMocks();
});

afterAll(async () => {
  delete process.env.FFMPEG_PATH;
  resetConfig();
  await rm(tools, { recursive: true, force: true });
});

async function setup() {
  const f = await makeAccount();
  const alice = phone();
  await inbound(f, alice, "send me a voice memo");
  const up = await call("POST", "/v1/files", { key: f.key, raw: new Uint8Array(64 * 1024).fill(7), headers: { "content-type": "audio/wav" } });
  expect(up.status).toBe(201);
  const send = () => post("/v1/audio-messages", f.key, { from: f.line.handle, to: alice, audio_message: up.body.id });
  return { send };
}

describe("audio conversion queue", () => {
  it("past the queue limit, a request is refused at once with 503 audio_conversion_busy and Retry-After", async () => {
    const { send } = await setup();
    await setDelay(1.5);
    setConversionLimitsForTests({ concurrency: 1, queue: 1 });
    const started = Date.now();
    const timed = (p: ReturnType<typeof send>) => p.then((res) => ({ res, ms: Date.now() - started }));
    const results = await Promise.all([timed(send()), timed(send()), timed(send())]);
    const busy = results.filter(({ res }) => res.status === 503);
    expect(busy).toHaveLength(1);
    const { res, ms } = busy[0]!;
    expect(res.body.error).toMatchObject({ type: "api_error", code: "audio_conversion_busy" });
    expect(res.body.request_id).toMatch(/^req_/);
    expect(res.headers.get("retry-after")).toBe("10");
    expect(ms).toBeLessThan(1_000); // not after waiting for the running conversion
    // The other two ran in turn and got the stand-in's verdict on the input.
    for (const other of results.filter((r) => r.res.status !== 503)) {
      expect(other.res.status).toBe(400);
      expect(other.res.body.error).toMatchObject({ code: "invalid_parameter_value", param: "audio_message" });
    }
  }, 15_000);

  it("a queued request reads the recording from storage only once it has a slot", async () => {
    const { send } = await setup();
    await setDelay(1.2);
    setConversionLimitsForTests({ concurrency: 1 });
    // Every way storage hands out bytes, counted (whichever the storage implements).
    const backend = storage() as unknown as Record<string, (...args: unknown[]) => unknown>;
    const reads = ["get", "open"].filter((m) => typeof backend[m] === "function").map((m) => vi.spyOn(backend, m));
    const readCount = () => reads.reduce((n, spy) => n + spy.mock.calls.length, 0);
    const first = send();
    const second = send();
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(readCount()).toBe(1); // the first is converting; the second waits without the bytes
    const [a, b] = await Promise.all([first, second]);
    expect([a.status, b.status]).toEqual([400, 400]);
    expect(readCount()).toBe(2);
    // Each conversion got the whole recording, streamed into its directory.
    const sizes = (await readFile(path.join(tools, "sizes"), "utf8")).trim().split("\n").map(Number);
    expect(sizes.slice(-2)).toEqual([64 * 1024, 64 * 1024]);
  }, 15_000);
});

import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { readCafInfo } from "@/server/audio/caf";
import { checkFfmpeg, convertToVoiceMemo, ffprobePath, setConversionLimitsForTests } from "@/server/audio/ffmpeg";
import { ApiError } from "@/server/kernel/errors";
import { resetConfig } from "@/server/kernel/config";
import { startRunner, stopRunner } from "@/server/engine/outbox-runner";
import { newId } from "@/server/kernel/ids";
import { voiceMemoFilename } from "@/server/services/messaging/send-audio";
import { call, get, inbound, makeAccount, phone, post, type Fixture } from "./helpers";

// Real recordings, made with the installed ffmpeg at test time, go through POST /v1/files and
// POST /v1/audio-messages; the stored voice memo is checked by reading its CAF header, with
// ffprobe, and by decoding it.

const run = promisify(execFile);
const q = encodeURIComponent;
let dir = "";
const fixtures: Record<string, Buffer> = {};

/** One second of a tone: [name, ffmpeg output arguments]. */
const RECORDINGS: [string, string[]][] = [
  ["tone.wav", ["-c:a", "pcm_s16le"]],
  ["tone.mp3", ["-c:a", "libmp3lame"]],
  ["tone.m4a", ["-c:a", "aac"]],
  ["tone.aiff", ["-c:a", "pcm_s16be"]],
  ["tone.caf", ["-c:a", "pcm_s16le"]],
  ["tone.ogg", ["-c:a", "libvorbis"]],
  ["tone.flac", ["-c:a", "flac"]],
];

async function ffmpeg(...args: string[]) {
  await run("ffmpeg", ["-nostdin", "-hide_banner", "-loglevel", "error", "-y", ...args]);
}

beforeAll(async () => {
  startRunner();
  dir = await mkdtemp(path.join(os.tmpdir(), "audio-test-"));
  const sine = (hz: number) => ["-f", "lavfi", "-i", `sine=frequency=${hz}:sample_rate=48000:duration=1`];
  for (const [name, args] of RECORDINGS) await ffmpeg(...sine(440), ...args, path.join(dir, name));
  await ffmpeg(...sine(16_000), path.join(dir, "high.wav"));
  await ffmpeg("-f", "lavfi", "-i", "anullsrc=r=44100:cl=mono", "-t", "0", path.join(dir, "empty.wav"));
  await ffmpeg("-f", "lavfi", "-i", "color=c=red:s=16x16", "-frames:v", "1", path.join(dir, "red.png"));
  await ffmpeg("-f", "lavfi", "-i", "color=c=red:s=16x16:d=1", "-c:v", "mpeg4", path.join(dir, "silent-video.mp4"));
  for (const name of await readdir(dir)) fixtures[name] = await readFile(path.join(dir, name));
  // A temporary directory of this file's own: the checks that conversions leave nothing
  // behind must not see other processes' work in the shared one.
  await mkdir(path.join(dir, "tmp"));
  process.env.TMPDIR = path.join(dir, "tmp");
}, 60_000);

afterAll(async () => {
  await stopRunner();
  await rm(dir, { recursive: true, force: true });
});

async function upload(f: Fixture, bytes: Uint8Array, filename: string, type = "application/octet-stream"): Promise<string> {
  const res = await call("POST", "/v1/files", { key: f.key, raw: bytes, headers: { "content-type": type, "x-filename": filename } });
  expect(res.status).toBe(201);
  return res.body.id;
}

/** An account whose line a contact has already messaged. */
async function ready(options: Parameters<typeof makeAccount>[0] = {}) {
  const f = await makeAccount(options);
  const alice = phone();
  const first = await inbound(f, alice, "send me a voice memo");
  return { f, alice, first };
}

async function waitSent(f: Fixture, id: string) {
  let item: { status: string; payload: { attachments: string[] } } | undefined;
  await vi.waitFor(
    async () => {
      item = (await get(`/v1/outbox?id=${id}`, f.key)).body;
      expect(item!.status).toBe("sent");
    },
    { timeout: 15_000, interval: 20 },
  );
  return item!;
}

async function download(key: string, fileId: string): Promise<{ bytes: Buffer; type: string | null }> {
  const redirect = await get(`/v1/files?id=${fileId}`, key);
  const { GET } = await import("@/app/api/files/[id]/route");
  const res = await GET(new Request(redirect.headers.get("location")!), { params: Promise.resolve({ id: fileId }) });
  expect(res.status).toBe(200);
  return { bytes: Buffer.from(await res.arrayBuffer()), type: res.headers.get("content-type") };
}

async function probe(bytes: Buffer) {
  const file = path.join(dir, `probe-${newId("file")}.caf`);
  await writeFile(file, bytes);
  const { stdout } = await run("ffprobe", ["-v", "error", "-show_streams", "-show_format", "-of", "json", file]);
  return JSON.parse(stdout) as { format: { format_name: string; duration: string }; streams: Record<string, unknown>[] };
}

/** Mean loudness of decoded audio in dBFS. */
async function loudness(bytes: Buffer): Promise<number> {
  const file = path.join(dir, `loud-${newId("file")}.caf`);
  await writeFile(file, bytes);
  const { stdout } = await run("ffmpeg", ["-nostdin", "-loglevel", "error", "-i", file, "-f", "f32le", "-ac", "1", "-"], {
    encoding: "buffer",
    maxBuffer: 64 * 1024 * 1024,
  });
  const samples = new Float32Array(stdout.buffer, stdout.byteOffset, stdout.byteLength / 4);
  const mean = samples.reduce((sum, s) => sum + s * s, 0) / samples.length;
  return 10 * Math.log10(mean + 1e-12);
}

const relayTempDirs = async () => new Set((await readdir(os.tmpdir())).filter((n) => n.startsWith("relay-audio-")));

describe("POST /v1/audio-messages", () => {
  it.each(["tone.wav", "tone.mp3", "tone.m4a", "tone.aiff", "tone.caf"])(
    "converts %s to a CAF/Opus mono voice memo and sends it as an audio message",
    async (name) => {
      const { f, alice, first } = await ready();
      const before = await relayTempDirs();
      const fileId = await upload(f, fixtures[name]!, name);
      const res = await post("/v1/audio-messages", f.key, { from: f.line.handle, to: alice, audio_message: fileId, reply_to: first.id });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ object: "outbox_item", id: expect.stringMatching(/^obx_/), status: "pending", request_id: expect.stringMatching(/^req_/) });
      expect([...(await relayTempDirs())].filter((d) => !before.has(d))).toEqual([]);

      const item = await waitSent(f, res.body.id);
      const [convertedId] = item.payload.attachments;
      expect(convertedId).not.toBe(fileId);
      const converted = await download(f.key, convertedId!);
      expect(converted.type).toBe("audio/x-caf");
      // The header declares what a native voice memo declares: 24 kHz Opus, 480 frames per 20 ms.
      const info = readCafInfo(converted.bytes);
      expect(info).toMatchObject({ sampleRate: 24_000, formatId: "opus", channels: 1, framesPerPacket: 480 });
      expect(Math.abs(info.durationSeconds - 1)).toBeLessThan(0.05); // the recordings last 1 s
      const probed = await probe(converted.bytes);
      expect(probed.format.format_name).toBe("caf");
      expect(probed.streams).toHaveLength(1);
      expect(probed.streams[0]).toMatchObject({ codec_type: "audio", codec_name: "opus", channels: 1 });
      expect(Math.abs(Number(probed.format.duration) - 1)).toBeLessThan(0.05);
      expect(await loudness(converted.bytes)).toBeGreaterThan(-30);

      const [sent] = (await get(`/v1/messages?from=${q(f.line.handle)}&to=${q(alice)}`, f.key)).body.data;
      expect(sent).toMatchObject({ is_from_me: true, is_audio_message: true, text: null, outbox_id: res.body.id, reply_to_guid: first.guid });
      expect(sent.attachments).toEqual([
        expect.objectContaining({ file_id: convertedId, filename: voiceMemoFilename(name), mime_type: "audio/x-caf", size: converted.bytes.length }),
      ]);
    },
  );

  it("resamples to 24 kHz: a 16 kHz tone, above the 12 kHz that 24 kHz audio can carry, is gone", async () => {
    const { f, alice } = await ready();
    const res = await post("/v1/audio-messages", f.key, { from: f.line.handle, to: alice, audio_message: await upload(f, fixtures["high.wav"]!, "high.wav") });
    expect(res.status).toBe(200);
    const payload = (await get(`/v1/outbox?id=${res.body.id}`, f.key)).body.payload;
    expect(payload).toMatchObject({ is_audio_message: true, text: null, attachments: [expect.stringMatching(/^file_/)] });
    const memo = (await download(f.key, payload.attachments[0])).bytes;
    expect(readCafInfo(memo).sampleRate).toBe(24_000);
    expect(await loudness(memo)).toBeLessThan(-50);
  });

  it("refuses files that are not accepted, decodable audio with 400 invalid_parameter_value on audio_message", async () => {
    const { f, alice } = await ready();
    const cases: [string, Uint8Array, RegExp][] = [
      ["garbage.bin", new Uint8Array(Array.from({ length: 4096 }, (_, i) => (i * 7919 + 13) % 251)), /could not be read as audio/],
      ["red.png", fixtures["red.png"]!, /png.*do not accept.*m4a, mp3, wav, caf, aiff/],
      ["tone.ogg", fixtures["tone.ogg"]!, /ogg.*do not accept.*m4a, mp3, wav, caf, aiff/],
      ["tone.flac", fixtures["tone.flac"]!, /flac.*do not accept.*m4a, mp3, wav, caf, aiff/],
      ["empty.wav", fixtures["empty.wav"]!, /contains no audio/],
      ["silent-video.mp4", fixtures["silent-video.mp4"]!, /no audio stream/],
      ["cut.m4a", fixtures["tone.m4a"]!.subarray(0, 200), /could not be read as audio/],
    ];
    const before = await relayTempDirs();
    for (const [name, bytes, message] of cases) {
      const id = await upload(f, bytes, name, name.endsWith(".png") ? "image/png" : "audio/mpeg");
      const res = await post("/v1/audio-messages", f.key, { from: f.line.handle, to: alice, audio_message: id });
      expect(res.status, name).toBe(400);
      expect(res.body.error, name).toMatchObject({ type: "invalid_request_error", code: "invalid_parameter_value", param: "audio_message" });
      expect(res.body.error.message, name).toMatch(message);
      expect(res.body.error.message, name).not.toContain(os.tmpdir());
    }
    expect([...(await relayTempDirs())].filter((d) => !before.has(d))).toEqual([]);
  });

  it("validates the request and applies the line rules of messages", async () => {
    const { f, alice } = await ready();
    const audio = await upload(f, fixtures["tone.wav"]!, "tone.wav");
    const base = { from: f.line.handle, to: alice };
    const other = await makeAccount();
    const othersFile = await upload(other, fixtures["tone.wav"]!, "tone.wav");
    const elsewhere = await inbound(f, phone(), "another chat");
    const cases: [unknown, number, string, string][] = [
      [{ ...base }, 400, "missing_required_parameter", "audio_message"],
      [{ from: f.line.handle, audio_message: audio }, 400, "missing_required_parameter", "to"],
      [{ to: alice, audio_message: audio }, 400, "missing_required_parameter", "from"],
      [{ ...base, audio_message: "msg_123" }, 400, "invalid_parameter_value", "audio_message"],
      [{ ...base, audio_message: [audio] }, 400, "invalid_parameter_value", "audio_message"],
      [{ ...base, audio_message: newId("file") }, 404, "file_not_found", "audio_message"],
      [{ ...base, audio_message: othersFile }, 404, "file_not_found", "audio_message"],
      [{ ...base, audio_message: audio, reply_to: "NO-SUCH-GUID" }, 404, "message_not_found", "reply_to"],
      [{ ...base, audio_message: audio, reply_to: elsewhere.id }, 400, "invalid_parameter_value", "reply_to"],
      [{ ...base, from: "+19999999999", audio_message: audio }, 404, "line_not_found", "from"],
      [{ ...base, to: phone(), audio_message: audio }, 403, "contact_has_not_messaged", "to"],
    ];
    for (const [body, status, code, param] of cases) {
      const res = await post("/v1/audio-messages", f.key, body);
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(res.body.error, JSON.stringify(body)).toMatchObject({ code, param });
    }

    const sms = await ready({ service: "sms" });
    const smsRes = await post("/v1/audio-messages", sms.f.key, { from: sms.f.line.handle, to: sms.alice, audio_message: await upload(sms.f, fixtures["tone.wav"]!, "a.wav") });
    expect(smsRes.status).toBe(400);
    expect(smsRes.body.error).toMatchObject({ code: "invalid_parameter_value", param: "from" });
    expect(smsRes.body.error.message).toMatch(/SMS line/);

    const basic = await ready({ advanced: false });
    const basicRes = await post("/v1/audio-messages", basic.f.key, { from: basic.f.line.handle, to: basic.alice, audio_message: await upload(basic.f, fixtures["tone.wav"]!, "a.wav") });
    expect(basicRes.status).toBe(400);
    expect(basicRes.body.error).toMatchObject({ type: "invalid_request_error", code: "advanced_features_required", param: "from" });

    const readOnly = await makeAccount({ scopes: ["messages:read", "files:write"] });
    const denied = await post("/v1/audio-messages", readOnly.key, { ...base, audio_message: audio });
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe("insufficient_scope");
    expect((await call("GET", "/v1/audio-messages", { key: f.key })).body.error.code).toBe("route_not_found");
  });

  it("sandbox: paired phone only, and only accepted audio messages count against the daily quota", async () => {
    const f = await makeAccount();
    const code = (await post("/v1/sandbox", f.key)).body.activation_code;
    const sandbox = (await get("/v1/sandbox", f.key)).body.sandbox_line_handle;
    const mine = phone();
    await post("/api/simulator/messages", f.key, { line: sandbox, from: mine, text: code });
    const audio = await upload(f, fixtures["tone.mp3"]!, "tone.mp3");
    const stranger = await post("/v1/audio-messages", f.key, { from: sandbox, to: phone(), audio_message: audio });
    expect(stranger.body.error).toMatchObject({ code: "sandbox_contact_mismatch", param: "to" });
    const bad = await post("/v1/audio-messages", f.key, { from: sandbox, to: mine, audio_message: await upload(f, fixtures["tone.ogg"]!, "x.ogg") });
    expect(bad.body.error.code).toBe("invalid_parameter_value");
    const ok = await post("/v1/audio-messages", f.key, { from: sandbox, to: mine, audio_message: audio });
    expect(ok.status).toBe(200);
    expect((await get("/v1/sandbox", f.key)).body.usage).toMatchObject({ used: 1 });
  });

  it("answers 503 audio_conversion_unavailable when FFMPEG_PATH does not run", async () => {
    const { f, alice } = await ready();
    const audio = await upload(f, fixtures["tone.wav"]!, "tone.wav");
    process.env.FFMPEG_PATH = path.join(dir, "no-such-dir", "ffmpeg");
    resetConfig();
    try {
      const res = await post("/v1/audio-messages", f.key, { from: f.line.handle, to: alice, audio_message: audio });
      expect(res.status).toBe(503);
      expect(res.body.error).toMatchObject({ type: "api_error", code: "audio_conversion_unavailable" });
      expect(res.body.error.message).toMatch(/not found.*FFMPEG_PATH/);
    } finally {
      delete process.env.FFMPEG_PATH;
      resetConfig();
    }
    const again = await post("/v1/audio-messages", f.key, { from: f.line.handle, to: alice, audio_message: audio });
    expect(again.status).toBe(200);
  });

  it("finds ffprobe beside the configured ffmpeg, and names the voice memo after the upload", () => {
    expect(ffprobePath("ffmpeg")).toBe("ffprobe");
    expect(ffprobePath("/opt/ffmpeg-7/bin/ffmpeg")).toBe("/opt/ffmpeg-7/bin/ffprobe");
    expect(ffprobePath("/usr/local/bin/ffmpeg-static")).toBe("/usr/local/bin/ffprobe-static");
    expect(voiceMemoFilename("memo.m4a")).toBe("memo.caf");
    expect(voiceMemoFilename("file")).toBe("file.caf");
    expect(voiceMemoFilename("a.b.wav")).toBe("a.b.caf");
  });
});

describe("conversion queue", () => {
  // ffmpeg and ffprobe behind wrappers that log when they start and end, after a delay read from
  // a file, so that the test can see which conversions ran at the same time.
  let tools = "";
  const log = () => path.join(tools, "log");
  const setDelay = (seconds: number) => writeFile(path.join(tools, "delay"), String(seconds));
  const events = async () => (await readFile(log(), "utf8")).trim().split("\n");
  const convert = () => convertToVoiceMemo(fixtures["tone.wav"]!);

  beforeAll(async () => {
    tools = path.join(dir, "logged-tools");
    await mkdir(tools);
    for (const tool of ["ffmpeg", "ffprobe"]) {
      const script = [
        "#!/bin/sh",
        `echo "start ${tool}" >> '${log()}'`,
        `sleep "$(cat '${tools}/delay')" </dev/null >/dev/null 2>&1`,
        `${tool} "$@"`, // the real one, from PATH
        "rc=$?",
        `echo "end ${tool}" >> '${log()}'`,
        "exit $rc",
      ];
      await writeFile(path.join(tools, tool), script.join("\n") + "\n", { mode: 0o755 });
    }
    await setDelay(0);
    process.env.FFMPEG_PATH = path.join(tools, "ffmpeg");
    resetConfig();
    expect(await checkFfmpeg()).toMatchObject({ ok: true }); // checked once, before the logs that count
  });

  afterEach(() => setConversionLimitsForTests(null));

  afterAll(() => {
    delete process.env.FFMPEG_PATH;
    resetConfig();
  });

  it("with the cap at 1, two simultaneous conversions take turns; with 2 they overlap", async () => {
    await setDelay(0.3);
    setConversionLimitsForTests({ concurrency: 1 });
    await writeFile(log(), "");
    for (const memo of await Promise.all([convert(), convert()])) expect(readCafInfo(memo).sampleRate).toBe(24_000);
    const oneConversion = ["start ffprobe", "end ffprobe", "start ffmpeg", "end ffmpeg"];
    expect(await events()).toEqual([...oneConversion, ...oneConversion]);

    setConversionLimitsForTests({ concurrency: 2 });
    await writeFile(log(), "");
    await Promise.all([convert(), convert()]);
    expect((await events()).slice(0, 2)).toEqual(["start ffprobe", "start ffprobe"]);
  });

  it("a queued conversion's wait counts against its time limit", async () => {
    // Each tool takes at least 1 s, so a conversion at least 2 s (about 2.2 s).
    await setDelay(1);
    const started = Date.now();
    const settled = (p: Promise<Buffer>) => p.then(
      (memo) => ({ memo, error: undefined, ms: Date.now() - started }),
      (error: unknown) => ({ memo: undefined, error: error as ApiError, ms: Date.now() - started }),
    );
    // The time limit applies to conversions as they are called: 10 s, 2.8 s, 0.3 s.
    setConversionLimitsForTests({ concurrency: 1, timeoutMs: 10_000 });
    const first = settled(convert());
    setConversionLimitsForTests({ concurrency: 1, timeoutMs: 2_800 });
    const second = settled(convert());
    setConversionLimitsForTests({ concurrency: 1, timeoutMs: 300 });
    const third = settled(convert());
    const [a, b, c] = await Promise.all([first, second, third]);

    expect(a.error).toBeUndefined();
    expect(readCafInfo(a.memo!).sampleRate).toBe(24_000);
    // The third never got a turn: refused at its deadline, while the first was still converting.
    expect(c.error).toBeInstanceOf(ApiError);
    expect(c.error).toMatchObject({ code: "audio_conversion_unavailable", status: 503, headers: { "Retry-After": expect.any(String) } });
    expect(c.error!.message).toMatch(/busy converting other audio: audio_message waited 0.3 s/);
    expect(c.ms).toBeLessThan(a.ms);
    // The second had 2.8 s in all. Had the wait not counted, it would have succeeded after
    // about 4.4 s (its turn after the first, then a whole conversion). It fails by its deadline:
    // either it got its turn and ran out of what was left (400, the usual case), or, on a slow
    // machine where the first conversion alone took over 2.8 s, it never got a turn (503).
    expect(b.error).toBeInstanceOf(ApiError);
    if (a.ms < 2_600) {
      expect(b.error).toMatchObject({ code: "invalid_parameter_value", param: "audio_message" });
      expect(b.error!.message).toMatch(/^Reading audio_message took longer than 2.8 s, \d s of which it waited for other conversions to finish/);
      expect(b.ms).toBeGreaterThan(a.ms);
    } else {
      expect(["audio_conversion_unavailable", "invalid_parameter_value"]).toContain(b.error!.code);
    }
    expect(b.ms).toBeLessThan(4_000);
  }, 20_000);
});

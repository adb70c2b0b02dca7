import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { config } from "../kernel/config";
import { ApiError, invalidParam } from "../kernel/errors";
import { processSingleton } from "../kernel/singleton";
import { declareSampleRate } from "./caf";

// ffmpeg writes Opus' internal 48 kHz into the CAF header whatever it encoded from, so the header is
// rewritten to declare 24 kHz, as Apple's voice memos do. A conversion reads its input only once it
// holds a slot, so waiting requests hold no audio in memory (docs/api.md, "Audio messages").

const ACCEPTED_AUDIO_FORMATS = ["m4a", "mp3", "wav", "caf", "aiff"] as const;
/** m4a is read by the mov/mp4 demuxer. */
const ACCEPTED_DEMUXERS = new Set(["mov", "mp4", "m4a", "mp3", "wav", "caf", "aiff"]);
/** Below this ffmpeg itself warns "misdetection possible" (AVPROBE_SCORE_RETRY). */
const MIN_PROBE_SCORE = 26;
const CONVERSION_TIMEOUT_MS = 60_000;
const VOICE_MEMO_RATE = 24_000;
const MAX_AUDIO_SECONDS = 30 * 60;
const QUEUE_PER_SLOT = 4;
/** A typical conversion takes a few seconds. */
const BUSY_RETRY_AFTER_SECONDS = 10;
/** Opus at 32 kbit/s makes about 4 MB per 15 minutes: a generous cap on what one conversion writes. */
const MAX_OUTPUT_BYTES = 32 * 1024 * 1024;
const MAX_TOOL_OUTPUT_CHARS = 256 * 1024;
const accepted = ACCEPTED_AUDIO_FORMATS.join(", ");

interface ToolRun {
  code: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

/** Its message names the binary without its directory. */
class ToolNotRunnable extends Error {
  constructor(bin: string, cause: NodeJS.ErrnoException) {
    const name = path.basename(bin);
    super(cause.code === "ENOENT" ? `${name} was not found` : `${name} cannot be run (${cause.code ?? cause.message})`);
  }
}

function runTool(bin: string, args: string[], deadline: number): Promise<ToolRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"], windowsHide: true });
    const out = { stdout: "", stderr: "" };
    for (const stream of ["stdout", "stderr"] as const) {
      child[stream].setEncoding("utf8");
      child[stream].on("data", (chunk: string) => {
        if (out[stream].length < MAX_TOOL_OUTPUT_CHARS) out[stream] += chunk;
      });
    }
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, Math.max(1, deadline - Date.now()));
    child.on("error", (err) => {
      clearTimeout(timer);
      reject(new ToolNotRunnable(bin, err));
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, ...out, timedOut });
    });
  });
}

export function ffprobePath(ffmpeg: string): string {
  const base = path.basename(ffmpeg);
  const probe = base.includes("ffmpeg") ? base.replace(/ffmpeg(?!.*ffmpeg)/, "ffprobe") : "ffprobe";
  return ffmpeg.includes("/") || ffmpeg.includes(path.sep) ? path.join(path.dirname(ffmpeg), probe) : probe;
}

const unavailable = (reason: string) =>
  new ApiError(
    "audio_conversion_unavailable",
    `Audio messages are unavailable on this server: ${reason}. The operator must install ffmpeg with libopus (and ffprobe) or set FFMPEG_PATH.`,
  );

/** A failed check is retried on the next request. */
const usable = processSingleton("ffmpeg-usable", () => new Set<string>());

export async function checkFfmpeg(): Promise<{ ok: true; path: string } | { ok: false; path: string; reason: string }> {
  const bin = config().FFMPEG_PATH;
  if (usable.has(bin)) return { ok: true, path: bin };
  const probe = ffprobePath(bin);
  const deadline = Date.now() + 10_000;
  try {
    const encoders = await runTool(bin, ["-hide_banner", "-nostdin", "-encoders"], deadline);
    if (encoders.code !== 0) return { ok: false, path: bin, reason: "ffmpeg -encoders failed" };
    if (!/\blibopus\b/.test(encoders.stdout)) return { ok: false, path: bin, reason: "ffmpeg has no libopus encoder" };
    const version = await runTool(probe, ["-hide_banner", "-version"], deadline);
    if (version.code !== 0) return { ok: false, path: bin, reason: "ffprobe -version failed" };
  } catch (err) {
    if (err instanceof ToolNotRunnable) return { ok: false, path: bin, reason: err.message };
    throw err;
  }
  usable.add(bin);
  return { ok: true, path: bin };
}

interface ConversionSlots {
  limit: number;
  queueLimit: number;
  timeoutMs: number;
  active: number;
  waiting: (() => void)[];
}

const defaultLimits = () => {
  const limit = Math.max(1, os.availableParallelism());
  return { limit, queueLimit: limit * QUEUE_PER_SLOT, timeoutMs: CONVERSION_TIMEOUT_MS };
};

/** One queue per process, whichever bundle converts. */
const slots = processSingleton("audio-conversion-slots", (): ConversionSlots => ({ ...defaultLimits(), active: 0, waiting: [] }));

function grantSlots(): void {
  while (slots.active < slots.limit && slots.waiting.length > 0) slots.waiting.shift()!();
}

function acquireSlot(deadline: number, param: string): Promise<boolean> {
  if (slots.active < slots.limit && slots.waiting.length === 0) {
    slots.active++;
    return Promise.resolve(true);
  }
  if (slots.waiting.length >= slots.queueLimit) {
    throw new ApiError(
      "audio_conversion_busy",
      `The server is converting as much audio as it can and ${slots.waiting.length} more ${slots.waiting.length === 1 ? "request is" : "requests are"} waiting; ${param} was not read. Try again in ${BUSY_RETRY_AFTER_SECONDS} s.`,
      { headers: { "Retry-After": String(BUSY_RETRY_AFTER_SECONDS) } },
    );
  }
  return new Promise((resolve) => {
    const grant = () => {
      clearTimeout(timer);
      slots.active++;
      resolve(true);
    };
    const timer = setTimeout(() => {
      const at = slots.waiting.indexOf(grant);
      if (at >= 0) slots.waiting.splice(at, 1);
      resolve(false);
    }, Math.max(0, deadline - Date.now()));
    slots.waiting.push(grant);
  });
}

function releaseSlot(): void {
  slots.active--;
  grantSlots();
}

/** Test hook (tests/audio.test.ts), not configuration; null restores the defaults. */
export function setConversionLimitsForTests(limits: { concurrency?: number; queue?: number; timeoutMs?: number } | null): void {
  const defaults = defaultLimits();
  slots.limit = Math.max(1, limits?.concurrency ?? defaults.limit);
  slots.queueLimit = Math.max(0, limits?.queue ?? slots.limit * QUEUE_PER_SLOT);
  slots.timeoutMs = limits?.timeoutMs ?? defaults.timeoutMs;
  grantSlots();
}

interface Budget {
  deadline: number;
  timeoutMs: number;
  waitedMs: number;
}

function tookTooLong(param: string, doing: "Reading" | "Converting", budget: Budget): ApiError {
  const limit = `${budget.timeoutMs / 1000} s`;
  if (budget.waitedMs < 1000) return invalidParam(param, `${doing} ${param} took longer than ${limit}; send a shorter recording.`);
  const waited = `${Math.round(budget.waitedMs / 1000)} s`;
  return invalidParam(param, `${doing} ${param} took longer than ${limit}, ${waited} of which it waited for other conversions to finish; send a shorter recording or try again later.`);
}

function reasonFrom(stderr: string, dir: string): string {
  const line = stderr.split("\n").map((l) => l.trim()).filter(Boolean).pop() ?? "unknown error";
  return line.replaceAll(`${dir}${path.sep}`, "").replace(/^input: /, "").slice(0, 200);
}

interface Probe {
  format?: { format_name?: string; format_long_name?: string; probe_score?: number; duration?: string };
  streams?: { codec_type?: string; duration?: string }[];
}

async function probeInput(bin: string, dir: string, file: string, budget: Budget, param: string): Promise<string> {
  const run = await runTool(ffprobePath(bin), ["-hide_banner", "-loglevel", "error", "-show_format", "-show_streams", "-of", "json", file], budget.deadline);
  if (run.timedOut) throw tookTooLong(param, "Reading", budget);
  let probed: Probe = {};
  try {
    probed = JSON.parse(run.stdout) as Probe;
  } catch {
    // no JSON: handled as unreadable below
  }
  const format = probed.format;
  if (run.code !== 0 || !format?.format_name || (format.probe_score ?? 0) < MIN_PROBE_SCORE) {
    const reason = run.code !== 0 ? reasonFrom(run.stderr, dir) : "format not recognized";
    throw invalidParam(param, `${param} could not be read as audio (${reason}). Upload an audio file in one of the accepted formats: ${accepted}.`);
  }
  const demuxers = format.format_name.split(",");
  if (!demuxers.some((d) => ACCEPTED_DEMUXERS.has(d))) {
    const what = format.format_long_name ? `${format.format_name} (${format.format_long_name})` : format.format_name;
    throw invalidParam(param, `${param} is in the ${what} format, which audio messages do not accept. Accepted formats: ${accepted}.`);
  }
  const audio = (probed.streams ?? []).filter((s) => s.codec_type === "audio");
  if (audio.length === 0) throw invalidParam(param, `${param} has no audio stream. Upload an audio file in one of the accepted formats: ${accepted}.`);
  const seconds = Number(format.duration ?? audio[0]!.duration ?? NaN);
  if (seconds > MAX_AUDIO_SECONDS) {
    throw invalidParam(param, `${param} is ${Math.ceil(seconds / 60)} minutes long; audio messages can be at most ${MAX_AUDIO_SECONDS / 60} minutes.`);
  }
  return demuxers[0]!;
}

export type AudioInput = Uint8Array | (() => Promise<AsyncIterable<Uint8Array>>);

export async function convertToVoiceMemo(input: AudioInput, param = "audio_message"): Promise<Buffer> {
  const start = Date.now();
  const timeoutMs = slots.timeoutMs;
  const deadline = start + timeoutMs;
  const status = await checkFfmpeg();
  if (!status.ok) throw unavailable(status.reason);
  if (!(await acquireSlot(deadline, param))) {
    throw new ApiError(
      "audio_conversion_unavailable",
      `The server is busy converting other audio: ${param} waited ${timeoutMs / 1000} s for its turn. Try again later.`,
      { headers: { "Retry-After": String(Math.ceil(timeoutMs / 1000 / 6)) } },
    );
  }
  try {
    return await convertInSlot(status.path, input, param, { deadline, timeoutMs, waitedMs: Date.now() - start });
  } finally {
    releaseSlot();
  }
}

async function convertInSlot(bin: string, input: AudioInput, param: string, budget: Budget): Promise<Buffer> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "relay-audio-"));
  try {
    const source = path.join(dir, "input");
    const target = path.join(dir, "voice-memo.caf");
    await writeFile(source, typeof input === "function" ? await input() : input);
    const demuxer = await probeInput(bin, dir, source, budget, param);
    // -t and -fs bound what one conversion can write, whatever the input's header claims.
    const args = [
      ...["-nostdin", "-hide_banner", "-loglevel", "error", "-nostats", "-progress", "pipe:1"],
      ...["-f", demuxer, "-i", source],
      ...["-map", "0:a:0", "-map_metadata", "-1", "-map_chapters", "-1"],
      ...["-ac", "1", "-ar", String(VOICE_MEMO_RATE), "-c:a", "libopus", "-b:a", "32k"],
      ...["-t", String(MAX_AUDIO_SECONDS), "-fs", String(MAX_OUTPUT_BYTES), "-f", "caf", "-y", target],
    ];
    const run = await runTool(bin, args, budget.deadline);
    if (run.timedOut) throw tookTooLong(param, "Converting", budget);
    if (run.code !== 0) {
      if (/Unknown encoder|Encoder not found/i.test(run.stderr)) throw unavailable("ffmpeg cannot encode Opus");
      throw invalidParam(param, `${param} could not be decoded (${reasonFrom(run.stderr, dir)}). Upload an audio file in one of the accepted formats: ${accepted}.`);
    }
    const encodedUs = Math.max(0, ...[...run.stdout.matchAll(/^out_time_us=(\d+)$/gm)].map((m) => Number(m[1])));
    if (encodedUs === 0) throw invalidParam(param, `${param} contains no audio (its audio stream is empty).`);
    const memo = declareSampleRate(await readFile(target), VOICE_MEMO_RATE);
    return Buffer.from(memo.buffer, memo.byteOffset, memo.byteLength);
  } catch (err) {
    if (!(err instanceof ToolNotRunnable)) throw err;
    usable.delete(bin); // removed since it was checked
    throw unavailable(err.message);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

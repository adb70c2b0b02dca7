import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { declareSampleRate, readCafInfo } from "./caf";

const run = promisify(execFile);

interface Pakt {
  packets: number;
  valid: number;
  priming?: number;
  remainder?: number;
  /** Varint bytes of the table, as written. */
  table?: number[];
  /** Overrides the chunk size (for malformed files). */
  size?: bigint;
}

interface Spec {
  rate?: number;
  format?: string;
  bytesPerPacket?: number;
  framesPerPacket?: number;
  channels?: number;
  pakt?: Pakt;
  /** Chunks in file order; "desc", "data" and "pakt" stand for the chunks above. */
  order?: string[];
  data?: number[];
  dataSize?: bigint;
  extra?: Record<string, number[]>;
  header?: [string, number, number];
}

function chunk(type: string, body: Uint8Array, size: bigint = BigInt(body.length)): Uint8Array {
  const out = new Uint8Array(12 + body.length);
  out.set(Buffer.from(type, "latin1"));
  new DataView(out.buffer).setBigInt64(4, size);
  out.set(body, 12);
  return out;
}

/** A CAF file: Opus at 48 kHz, 960 frames per packet, mono, unless `spec` says otherwise. */
function caf(spec: Spec = {}): Uint8Array {
  const desc = new Uint8Array(32);
  const d = new DataView(desc.buffer);
  d.setFloat64(0, spec.rate ?? 48000);
  desc.set(Buffer.from(spec.format ?? "opus", "latin1"), 8);
  d.setUint32(16, spec.bytesPerPacket ?? 0);
  d.setUint32(20, spec.framesPerPacket ?? 960);
  d.setUint32(24, spec.channels ?? 1);
  const parts: Record<string, Uint8Array> = { desc: chunk("desc", desc), data: chunk("data", Uint8Array.from([0, 0, 0, 0, ...(spec.data ?? [1, 2, 3, 4, 5, 6])]), spec.dataSize) };
  if (spec.pakt) {
    const p = spec.pakt;
    const table = p.table ?? [];
    const body = new Uint8Array(24 + table.length);
    const v = new DataView(body.buffer);
    v.setBigInt64(0, BigInt(p.packets));
    v.setBigInt64(8, BigInt(p.valid));
    v.setInt32(16, p.priming ?? 0);
    v.setInt32(20, p.remainder ?? 0);
    body.set(table, 24);
    parts.pakt = chunk("pakt", body, p.size);
  }
  for (const [type, body] of Object.entries(spec.extra ?? {})) parts[type] = chunk(type, Uint8Array.from(body));
  const order = spec.order ?? ["desc", ...Object.keys(spec.extra ?? {}), "data", ...(spec.pakt ? ["pakt"] : [])];
  const [magic, version, flags] = spec.header ?? ["caff", 1, 0];
  const header = new Uint8Array(8);
  header.set(Buffer.from(magic, "latin1"));
  new DataView(header.buffer).setUint16(4, version);
  new DataView(header.buffer).setUint16(6, flags);
  return Buffer.concat([header, ...order.map((t) => parts[t]!)]);
}

/** Three 20 ms Opus packets at 48 kHz (80, 200 and 90 bytes), 312 priming and 568 remainder frames. */
const opus = () => caf({ pakt: { packets: 3, valid: 2000, priming: 312, remainder: 568, table: [80, 0x81, 0x48, 90] } });

/** The bytes of each chunk, by type, without the header. */
function chunks(bytes: Uint8Array): Record<string, Uint8Array> {
  const out: Record<string, Uint8Array> = {};
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let at = 8; at < bytes.length; ) {
    const size = Number(view.getBigInt64(at + 4));
    out[Buffer.from(bytes.subarray(at, at + 4)).toString("latin1")] = bytes.subarray(at + 12, at + 12 + size);
    at += 12 + size;
  }
  return out;
}

describe("readCafInfo", () => {
  it("reads desc and pakt of an Opus file", () => {
    expect(readCafInfo(opus())).toEqual({
      sampleRate: 48000,
      formatId: "opus",
      channels: 1,
      framesPerPacket: 960,
      validFrames: 2000,
      priming: 312,
      remainder: 568,
      durationSeconds: 2000 / 48000,
    });
  });

  it("counts the frames of constant-size packets from the data chunk, also when its size is -1", () => {
    // 16-bit stereo PCM: 4 bytes per frame; 10 frames after the 4-byte edit count.
    const pcm = { format: "lpcm", rate: 8000, bytesPerPacket: 4, framesPerPacket: 1, channels: 2, data: Array(40).fill(7) };
    expect(readCafInfo(caf(pcm))).toMatchObject({ formatId: "lpcm", channels: 2, validFrames: 10, priming: 0, remainder: 0, durationSeconds: 10 / 8000 });
    expect(readCafInfo(caf({ ...pcm, dataSize: -1n })).validFrames).toBe(10);
  });

  it("refuses malformed files with an Error that says what is wrong", () => {
    const cases: [string, Uint8Array, RegExp][] = [
      ["empty", new Uint8Array(), /does not start with 'caff'/],
      ["riff", caf({ header: ["RIFF", 1, 0] }), /does not start with 'caff'/],
      ["version 2", caf({ header: ["caff", 2, 0] }), /unsupported file version 2/],
      ["flags", caf({ header: ["caff", 1, 1] }), /unsupported file version 1 \(flags 1\)/],
      ["truncated", opus().subarray(0, 100), /claims \d+ bytes but only \d+ remain/],
      ["stray bytes", Buffer.concat([opus(), Buffer.from([1, 2, 3])]), /3 stray bytes/],
      ["desc not first", caf({ pakt: { packets: 0, valid: 0 }, order: ["data", "desc", "pakt"] }), /first chunk is not 'desc'/],
      ["no data", caf({ pakt: { packets: 0, valid: 0 }, order: ["desc", "pakt"] }), /no 'data' chunk/],
      ["two pakt", caf({ pakt: { packets: 0, valid: 0 }, order: ["desc", "data", "pakt", "pakt"] }), /2 'pakt' chunks/],
      ["no pakt", caf(), /variable-size packets but the file has no 'pakt'/],
      ["negative size", caf({ pakt: { packets: 0, valid: 0, size: -5n } }), /'pakt' has the size -5/],
      ["-1 not on data", caf({ pakt: { packets: 0, valid: 0, size: -1n } }), /'pakt' has the size -1/],
      ["zero rate", caf({ rate: 0, pakt: { packets: 0, valid: 0 } }), /sample rate 0 is not a positive number/],
      ["NaN rate", caf({ rate: NaN, pakt: { packets: 0, valid: 0 } }), /sample rate NaN/],
      ["no channels", caf({ channels: 0, pakt: { packets: 0, valid: 0 } }), /0 channels/],
      ["short pakt", caf({ pakt: { packets: 0, valid: 0, size: 20n } }).subarray(0, -4), /fewer than its 24-byte header/],
      ["cut table", caf({ pakt: { packets: 3, valid: 2880, table: [80, 0x81] } }), /lists 3 packets in 2 bytes/],
      ["cut entry", caf({ pakt: { packets: 2, valid: 1920, table: [80, 0x81] } }), /ends inside an entry/],
      ["huge entry", caf({ pakt: { packets: 1, valid: 960, table: [...Array(9).fill(0xff), 1] } }), /out of range/],
      ["negative priming", caf({ pakt: { packets: 1, valid: 960, priming: -1, table: [80] } }), /negative priming/],
      ["too many frames", caf({ pakt: { packets: 1, valid: 961, table: [80] } }), /961 valid \+ 0 priming \+ 0 remainder frames in packets of 960/],
    ];
    for (const [name, bytes, message] of cases) {
      expect(() => readCafInfo(bytes), name).toThrow(message);
      expect(() => readCafInfo(bytes), name).toThrow(/^Malformed CAF file: /);
      expect(() => declareSampleRate(bytes, 24000), name).toThrow(message);
    }
  });
});

describe("declareSampleRate", () => {
  it("rescales desc and the pakt header of constant-frame packets in place, leaving every other byte alone", () => {
    const before = caf({ extra: { chan: [0, 0x64, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0] }, pakt: { packets: 3, valid: 2000, priming: 312, remainder: 568, table: [80, 0x81, 0x48, 90] } });
    const after = declareSampleRate(before, 24000);
    expect(readCafInfo(after)).toEqual({
      sampleRate: 24000,
      formatId: "opus",
      channels: 1,
      framesPerPacket: 480,
      validFrames: 1000,
      priming: 156,
      remainder: 284,
      durationSeconds: 1000 / 24000,
    });
    expect(after.length).toBe(before.length);
    const [was, now] = [chunks(before), chunks(after)];
    for (const type of ["chan", "data"]) expect(Buffer.from(now[type]!).equals(Buffer.from(was[type]!)), type).toBe(true);
    expect([...now.pakt!.subarray(24)]).toEqual([80, 0x81, 0x48, 90]);
    // Bytes 8..19 (format, flags, bytes per packet) and 24..31 (channels, bits) are unchanged.
    expect([...now.desc!.subarray(8, 20), ...now.desc!.subarray(24)]).toEqual([...was.desc!.subarray(8, 20), ...was.desc!.subarray(24)]);
    expect(readCafInfo(before).sampleRate).toBe(48000); // the input is not modified
  });

  it("rescales per-packet frame counts and re-encodes the table, moving the chunks after it", () => {
    // Packets of 240, 960, 2880 and 120 frames at 48 kHz (5, 20, 60 and 2.5 ms); sizes 80, 200, 300000, 4.
    const table = [80, 0x81, 0x70, 0x81, 0x48, 0x87, 0x40, 0x92, 0xa7, 0x60, 0x96, 0x40, 4, 0x78];
    const before = caf({ framesPerPacket: 0, pakt: { packets: 4, valid: 4000, priming: 200, remainder: 0, table }, order: ["desc", "pakt", "data"], data: [9, 8, 7] });
    const after = declareSampleRate(before, 24000);
    // 240 needed two bytes, 120 needs one: the chunk is a byte shorter.
    expect(after.length).toBe(before.length - 1);
    const now = chunks(after);
    expect([...now.pakt!.subarray(24)]).toEqual([80, 0x78, 0x81, 0x48, 0x83, 0x60, 0x92, 0xa7, 0x60, 0x8b, 0x20, 4, 0x3c]);
    expect([...now.data!]).toEqual([0, 0, 0, 0, 9, 8, 7]);
    // All frames (4200 -> 2100) minus priming (200 -> 100) minus remainder stay the valid frames.
    expect(readCafInfo(after)).toMatchObject({ sampleRate: 24000, framesPerPacket: 0, validFrames: 2000, priming: 100, remainder: 0, durationSeconds: 2000 / 24000 });
  });

  it("keeps validFrames consistent when priming and remainder do not halve evenly, and scales an inconsistent count alone", () => {
    const odd = declareSampleRate(caf({ pakt: { packets: 3, valid: 2000, priming: 313, remainder: 567, table: [1, 1, 1] } }), 24000);
    const info = readCafInfo(odd);
    expect(info.validFrames + info.priming + info.remainder).toBe(3 * 480);
    const loose = declareSampleRate(caf({ pakt: { packets: 3, valid: 1001, table: [1, 1, 1] } }), 24000);
    expect(readCafInfo(loose)).toMatchObject({ validFrames: 501, priming: 0, remainder: 0 });
  });

  it("rescales only desc of constant-size Opus packets without a packet table", () => {
    const cbr = caf({ bytesPerPacket: 80, data: Array(160).fill(1) });
    expect(readCafInfo(declareSampleRate(cbr, 24000))).toMatchObject({ sampleRate: 24000, framesPerPacket: 480, validFrames: 960, durationSeconds: 0.04 });
  });

  it("returns an unchanged copy when the rate is already declared", () => {
    const before = opus();
    const same = declareSampleRate(before, 48000);
    expect(same).not.toBe(before);
    expect(Buffer.from(same).equals(Buffer.from(before))).toBe(true);
    same[20] = 0; // a copy, not a view of the same memory (Buffer#slice would be one)
    expect(readCafInfo(before).sampleRate).toBe(48000);
  });

  it("refuses what it cannot rescale faithfully", () => {
    expect(() => declareSampleRate(opus(), 11025)).toThrow(/Cannot declare 11025 Hz: a packet of 960 frames is not a whole number/);
    expect(() => declareSampleRate(opus(), 0)).toThrow(/must be a positive number/);
    expect(() => declareSampleRate(opus(), Infinity)).toThrow(/must be a positive number/);
    const pcm = caf({ format: "lpcm", bytesPerPacket: 2, framesPerPacket: 1 });
    expect(() => declareSampleRate(pcm, 24000)).toThrow(/'lpcm' audio: only Opus/);
    const marked = caf({ extra: { mark: [0, 0, 0, 0] }, pakt: { packets: 0, valid: 0 } });
    expect(() => declareSampleRate(marked, 24000)).toThrow(/'mark' chunk holds frame positions/);
  });

  it("patches a file made by ffmpeg so that it declares 24 kHz and still probes and decodes the same", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "caf-test-"));
    try {
      const [source, encoded, patched] = ["tone.wav", "encoded.caf", "patched.caf"].map((n) => path.join(dir, n));
      const ffmpeg = (...args: string[]) => run("ffmpeg", ["-nostdin", "-hide_banner", "-loglevel", "error", "-y", ...args], { encoding: "buffer", maxBuffer: 64 << 20 });
      await ffmpeg("-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=1.5", source!);
      await ffmpeg("-i", source!, "-ac", "1", "-ar", "24000", "-c:a", "libopus", "-b:a", "32k", "-f", "caf", encoded!);
      const original = await readFile(encoded!);
      expect(readCafInfo(original)).toMatchObject({ sampleRate: 48000, framesPerPacket: 960 }); // what ffmpeg 5.1 writes
      const bytes = declareSampleRate(original, 24000);
      await writeFile(patched!, bytes);
      const info = readCafInfo(bytes);
      expect(info).toMatchObject({ sampleRate: 24000, formatId: "opus", channels: 1, framesPerPacket: 480 });
      expect(Math.abs(info.durationSeconds - 1.5)).toBeLessThan(0.05);

      const { stdout } = await run("ffprobe", ["-v", "error", "-show_streams", "-show_format", "-of", "json", patched!]);
      const probed = JSON.parse(stdout) as { format: { duration: string }; streams: Record<string, unknown>[] };
      expect(probed.streams).toEqual([expect.objectContaining({ codec_name: "opus", channels: 1 })]);
      expect(Math.abs(Number(probed.format.duration) - 1.5)).toBeLessThan(0.05);
      const decode = (file: string) => ffmpeg("-i", file, "-f", "f32le", "-");
      const [was, now] = [await decode(encoded!), await decode(patched!)];
      expect(now.stderr.toString()).toBe("");
      expect(Buffer.compare(now.stdout, was.stdout)).toBe(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

// CAF (Apple "Core Audio Format Specification"), big-endian: a 'caff' header, then chunks of a
// 4-byte type, an int64 size and that many bytes (only a last 'data' chunk may say -1, "to the
// end"). 'desc' comes first; variable packets have a 'pakt' table of per-packet byte sizes and/or
// frame counts, each a BER varint (7 bits per byte, most significant first, high bit on all but the last).

export interface CafInfo {
  sampleRate: number;
  formatId: string;
  channels: number;
  /** 0 when packets carry different frame counts (they are listed in 'pakt'). */
  framesPerPacket: number;
  validFrames: number;
  priming: number;
  remainder: number;
  durationSeconds: number;
}

const HEADER_BYTES = 8;
const CHUNK_HEADER_BYTES = 12;
const DESC_BYTES = 32;
const PAKT_HEADER_BYTES = 24;
/** Chunks holding sample-frame positions that declareSampleRate would have to rescale too. */
const FRAME_POSITION_CHUNKS = new Set(["mark", "regn", "ovvw", "peak", "lyrc"]);

interface Chunk {
  type: string;
  start: number;
  body: number;
  end: number;
}

interface Desc {
  sampleRate: number;
  formatId: string;
  bytesPerPacket: number;
  framesPerPacket: number;
  channels: number;
}

interface PacketTable {
  packets: number;
  validFrames: number;
  priming: number;
  remainder: number;
  entries: [number | null, number | null][];
}

interface Parsed {
  bytes: Uint8Array;
  view: DataView;
  chunks: Chunk[];
  desc: Desc;
  data: Chunk;
  pakt: (PacketTable & { chunk: Chunk }) | null;
}

const malformed = (what: string) => new Error(`Malformed CAF file: ${what}.`);

const fourCC = (bytes: Uint8Array, at: number) => String.fromCharCode(...bytes.subarray(at, at + 4));

function safeNumber(value: bigint, what: string): number {
  if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < BigInt(Number.MIN_SAFE_INTEGER)) throw malformed(`${what} is out of range`);
  return Number(value);
}

function readChunks(bytes: Uint8Array, view: DataView): Chunk[] {
  if (bytes.length < HEADER_BYTES || fourCC(bytes, 0) !== "caff") throw malformed("it does not start with 'caff'");
  const version = view.getUint16(4);
  const flags = view.getUint16(6);
  if (version !== 1 || flags !== 0) throw malformed(`unsupported file version ${version} (flags ${flags}); only version 1 is defined`);
  const chunks: Chunk[] = [];
  let at = HEADER_BYTES;
  while (at < bytes.length) {
    if (bytes.length - at < CHUNK_HEADER_BYTES) throw malformed(`${bytes.length - at} stray bytes after the last chunk`);
    const type = fourCC(bytes, at);
    const declared = view.getBigInt64(at + 4);
    const body = at + CHUNK_HEADER_BYTES;
    let end: number;
    if (declared === -1n && type === "data") end = bytes.length; // only valid for the last chunk, which this makes it
    else if (declared < 0n) throw malformed(`chunk '${type}' has the size ${declared}`);
    else if (declared > BigInt(bytes.length - body)) throw malformed(`chunk '${type}' claims ${declared} bytes but only ${bytes.length - body} remain`);
    else end = body + Number(declared);
    chunks.push({ type, start: at, body, end });
    at = end;
  }
  return chunks;
}

function readDesc(bytes: Uint8Array, view: DataView, chunk: Chunk | undefined): Desc {
  if (chunk?.type !== "desc") throw malformed("the first chunk is not 'desc'");
  if (chunk.end - chunk.body !== DESC_BYTES) throw malformed(`'desc' has ${chunk.end - chunk.body} bytes instead of ${DESC_BYTES}`);
  const at = chunk.body;
  const desc: Desc = {
    sampleRate: view.getFloat64(at),
    formatId: fourCC(bytes, at + 8),
    bytesPerPacket: view.getUint32(at + 16),
    framesPerPacket: view.getUint32(at + 20),
    channels: view.getUint32(at + 24),
  };
  if (!Number.isFinite(desc.sampleRate) || desc.sampleRate <= 0) throw malformed(`the sample rate ${desc.sampleRate} is not a positive number`);
  if (desc.channels === 0) throw malformed("'desc' declares 0 channels");
  return desc;
}

function readVarint(bytes: Uint8Array, at: number, end: number): [number, number] {
  let value = 0;
  for (let i = at; i < end; i++) {
    const byte = bytes[i]!;
    value = value * 128 + (byte & 0x7f);
    if (value > Number.MAX_SAFE_INTEGER) throw malformed("a packet table entry is out of range");
    if ((byte & 0x80) === 0) return [value, i + 1];
  }
  throw malformed("the packet table ends inside an entry");
}

function writeVarint(value: number, out: number[]): void {
  const groups = [value % 128];
  for (let rest = Math.floor(value / 128); rest > 0; rest = Math.floor(rest / 128)) groups.unshift((rest % 128) | 0x80);
  out.push(...groups);
}

function readPakt(bytes: Uint8Array, view: DataView, chunk: Chunk, desc: Desc): PacketTable {
  if (chunk.end - chunk.body < PAKT_HEADER_BYTES) throw malformed(`'pakt' has ${chunk.end - chunk.body} bytes, fewer than its ${PAKT_HEADER_BYTES}-byte header`);
  const at = chunk.body;
  const table: PacketTable = {
    packets: safeNumber(view.getBigInt64(at), "mNumberPackets"),
    validFrames: safeNumber(view.getBigInt64(at + 8), "mNumberValidFrames"),
    priming: view.getInt32(at + 16),
    remainder: view.getInt32(at + 20),
    entries: [],
  };
  for (const key of ["packets", "validFrames", "priming", "remainder"] as const) {
    if (table[key] < 0) throw malformed(`'pakt' has a negative ${key} count (${table[key]})`);
  }
  const sizes = desc.bytesPerPacket === 0;
  const frames = desc.framesPerPacket === 0;
  if (sizes || frames) {
    // Each entry takes at least one byte: a count larger than the chunk cannot be right.
    let p = at + PAKT_HEADER_BYTES;
    if (table.packets > chunk.end - p) throw malformed(`'pakt' lists ${table.packets} packets in ${chunk.end - p} bytes`);
    for (let i = 0; i < table.packets; i++) {
      let size: number | null = null;
      let count: number | null = null;
      if (sizes) [size, p] = readVarint(bytes, p, chunk.end);
      if (frames) [count, p] = readVarint(bytes, p, chunk.end);
      table.entries.push([size, count]);
    }
  }
  const total = totalFrames(desc, table);
  if (table.validFrames + table.priming + table.remainder > total) {
    throw malformed(`'pakt' counts ${table.validFrames} valid + ${table.priming} priming + ${table.remainder} remainder frames in packets of ${total} frames`);
  }
  return table;
}

function parse(input: Uint8Array): Parsed {
  const bytes = input;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const chunks = readChunks(bytes, view);
  const desc = readDesc(bytes, view, chunks[0]);
  const find = (type: string) => {
    const found = chunks.filter((c) => c.type === type);
    if (found.length > 1) throw malformed(`it has ${found.length} '${type}' chunks`);
    return found[0];
  };
  const data = find("data");
  if (!data) throw malformed("it has no 'data' chunk");
  if (data.end - data.body < 4) throw malformed("the 'data' chunk is shorter than its 4-byte edit count");
  const paktChunk = find("pakt");
  if (!paktChunk && (desc.bytesPerPacket === 0 || desc.framesPerPacket === 0)) {
    throw malformed(`'${desc.formatId}' has variable-size packets but the file has no 'pakt' chunk`);
  }
  const pakt = paktChunk ? { ...readPakt(bytes, view, paktChunk, desc), chunk: paktChunk } : null;
  return { bytes, view, chunks, desc, data, pakt };
}

function totalFrames(desc: Desc, pakt: PacketTable): number {
  return desc.framesPerPacket === 0 ? pakt.entries.reduce((sum, [, frames]) => sum + frames!, 0) : pakt.packets * desc.framesPerPacket;
}

export function readCafInfo(bytes: Uint8Array): CafInfo {
  const { desc, data, pakt } = parse(bytes);
  let validFrames: number;
  let priming = 0;
  let remainder = 0;
  if (pakt) ({ validFrames, priming, remainder } = pakt);
  else validFrames = Math.floor((data.end - data.body - 4) / desc.bytesPerPacket) * desc.framesPerPacket;
  return {
    sampleRate: desc.sampleRate,
    formatId: desc.formatId,
    channels: desc.channels,
    framesPerPacket: desc.framesPerPacket,
    validFrames,
    priming,
    remainder,
    durationSeconds: validFrames / desc.sampleRate,
  };
}

/** A packet cannot hold part of a frame. */
function scaleExact(frames: number, ratio: number, what: string, rate: number): number {
  const scaled = frames * ratio;
  const rounded = Math.round(scaled);
  if (Math.abs(scaled - rounded) > 1e-6) throw new Error(`Cannot declare ${rate} Hz: ${what} of ${frames} frames is not a whole number of frames at that rate.`);
  return rounded;
}

// Only for Opus, whose declared rate is nominal (the decoder always runs at 48 kHz): for other formats it would change
// the playback speed. The audio data is untouched; the result is a copy, never a view (a Buffer's slice() shares memory).
export function declareSampleRate(input: Uint8Array, rate: number): Uint8Array {
  if (!Number.isFinite(rate) || rate <= 0) throw new Error(`Cannot declare the sample rate ${rate}: it must be a positive number.`);
  const parsed = parse(input);
  const { desc, pakt } = parsed;
  if (desc.formatId !== "opus") throw new Error(`Cannot declare another sample rate for '${desc.formatId}' audio: only Opus has a nominal sample rate.`);
  const positioned = parsed.chunks.find((c) => FRAME_POSITION_CHUNKS.has(c.type));
  if (positioned) throw new Error(`Cannot declare another sample rate: the '${positioned.type}' chunk holds frame positions that would not be rescaled.`);
  if (desc.sampleRate === rate) return new Uint8Array(input);

  const ratio = rate / desc.sampleRate;
  const framesPerPacket = scaleExact(desc.framesPerPacket, ratio, "a packet", rate);
  const view = (out: Uint8Array) => new DataView(out.buffer, out.byteOffset, out.byteLength);
  const setDesc = (out: Uint8Array) => {
    view(out).setFloat64(parsed.chunks[0]!.body, rate);
    view(out).setUint32(parsed.chunks[0]!.body + 20, framesPerPacket);
    return out;
  };
  if (!pakt) return setDesc(new Uint8Array(input)); // constant-size packets of constant frames
  const entries = pakt.entries.map(([size, frames]): [number | null, number | null] => [size, frames === null ? null : scaleExact(frames, ratio, "a packet", rate)]);
  const priming = Math.round(pakt.priming * ratio);
  const remainder = Math.round(pakt.remainder * ratio);
  if (Math.max(priming, remainder) > 0x7fff_ffff) throw new Error(`Cannot declare ${rate} Hz: the priming or remainder frames no longer fit the 'pakt' header.`);
  // Keep validFrames = all frames - priming - remainder when the file kept it; else scale it alone.
  const total = totalFrames(desc, pakt);
  const newTotal = totalFrames({ ...desc, framesPerPacket }, { ...pakt, entries });
  const validFrames = pakt.validFrames === total - pakt.priming - pakt.remainder ? newTotal - priming - remainder : Math.round(pakt.validFrames * ratio);

  // With per-packet frame counts the table changes length: rebuild 'pakt' and the file around it.
  let out: Uint8Array;
  let paktBody: number;
  if (desc.framesPerPacket === 0) {
    const table: number[] = [];
    for (const [size, frames] of entries) {
      if (size !== null) writeVarint(size, table);
      writeVarint(frames!, table);
    }
    const chunk = pakt.chunk;
    const paktBytes = new Uint8Array(CHUNK_HEADER_BYTES + PAKT_HEADER_BYTES + table.length);
    paktBytes.set(input.subarray(chunk.start, chunk.body + PAKT_HEADER_BYTES));
    new DataView(paktBytes.buffer).setBigInt64(4, BigInt(PAKT_HEADER_BYTES + table.length));
    paktBytes.set(table, CHUNK_HEADER_BYTES + PAKT_HEADER_BYTES);
    out = new Uint8Array(input.length - (chunk.end - chunk.start) + paktBytes.length);
    out.set(input.subarray(0, chunk.start));
    out.set(paktBytes, chunk.start);
    out.set(input.subarray(chunk.end), chunk.start + paktBytes.length);
    paktBody = chunk.start + CHUNK_HEADER_BYTES;
  } else {
    out = new Uint8Array(input);
    paktBody = pakt.chunk.body;
  }
  view(out).setBigInt64(paktBody + 8, BigInt(validFrames));
  view(out).setInt32(paktBody + 16, priming);
  view(out).setInt32(paktBody + 20, remainder);
  return setDesc(out);
}

import { createHash } from "node:crypto";

// ustar, so `tar -xzf` opens a backup with standard tools; streamed an entry at a time, each hashed.

const BLOCK = 512;
/** ustar sizes are 11 octal digits. */
const MAX_ENTRY_BYTES = 8 ** 11 - 1;

export class ArchiveError extends Error {}

export interface EntryDigest {
  size: number;
  sha256: string;
}

function octal(value: number, width: number): string {
  return `${value.toString(8).padStart(width - 1, "0")}\0`;
}

function splitName(name: string): [prefix: string, name: string] {
  if (Buffer.byteLength(name) <= 100) return ["", name];
  for (let at = name.indexOf("/"); at > 0; at = name.indexOf("/", at + 1)) {
    const [prefix, rest] = [name.slice(0, at), name.slice(at + 1)];
    if (Buffer.byteLength(prefix) <= 155 && Buffer.byteLength(rest) <= 100) return [prefix, rest];
  }
  throw new ArchiveError(`the path ${name} is too long for the archive`);
}

function checksum(header: Buffer): number {
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : header[i]!;
  return sum;
}

function header(name: string, size: number, mtime: number): Buffer {
  if (size > MAX_ENTRY_BYTES) throw new ArchiveError(`${name} is larger than the archive format allows (8 GiB)`);
  const [prefix, short] = splitName(name);
  const block = Buffer.alloc(BLOCK);
  block.write(short, 0);
  block.write(octal(0o600, 8), 100);
  block.write(octal(0, 8), 108);
  block.write(octal(0, 8), 116);
  block.write(octal(size, 12), 124);
  block.write(octal(Math.floor(mtime / 1000), 12), 136);
  block.write("0", 156);
  block.write("ustar\0", 257);
  block.write("00", 263);
  block.write(prefix, 345);
  block.write(`${checksum(block).toString(8).padStart(6, "0")}\0 `, 148);
  return block;
}

const padding = (size: number) => Buffer.alloc((BLOCK - (size % BLOCK)) % BLOCK);

/**
 * One entry's bytes: header, body, padding. The body must be exactly `size` bytes;
 * `done` receives its digest once it has been yielded.
 */
export async function* archiveEntry(
  name: string,
  size: number,
  body: Uint8Array | AsyncIterable<Uint8Array>,
  done: (digest: EntryDigest) => void,
  mtime = Date.now(),
): AsyncGenerator<Uint8Array> {
  yield header(name, size, mtime);
  const hash = createHash("sha256");
  let length = 0;
  for await (const chunk of body instanceof Uint8Array ? [body] : body) {
    length += chunk.byteLength;
    if (length > size) break;
    hash.update(chunk);
    yield chunk;
  }
  if (length !== size) throw new ArchiveError(`${name} changed while it was being copied (${length} bytes, expected ${size})`);
  yield padding(size);
  done({ size, sha256: hash.digest("hex") });
}

export const ARCHIVE_END = Buffer.alloc(2 * BLOCK);

export interface EntrySink {
  write(chunk: Buffer): Promise<void>;
  end(digest: EntryDigest): Promise<void>;
}

function parseHeader(block: Buffer): { name: string; size: number } {
  const stored = parseInt(block.toString("latin1", 148, 156).replace(/[\0 ]+$/, "").trim(), 8);
  if (stored !== checksum(block)) throw new ArchiveError("a header's checksum is wrong (the file is corrupt)");
  const text = (start: number, length: number) => block.toString("utf8", start, start + length).replace(/\0.*$/s, "");
  const type = block[156];
  if (type !== 0x30 && type !== 0) throw new ArchiveError(`entry ${text(0, 100)} is not a regular file`);
  const sizeField = text(124, 12).trim();
  if (!/^[0-7]+$/.test(sizeField)) throw new ArchiveError("a header's size is not a number (the file is corrupt)");
  const prefix = text(345, 155);
  const name = prefix ? `${prefix}/${text(0, 100)}` : text(0, 100);
  return { name, size: parseInt(sizeField, 8) };
}

export async function readArchive(chunks: AsyncIterable<Buffer>, open: (name: string, size: number) => Promise<EntrySink>): Promise<void> {
  let buffer: Buffer = Buffer.alloc(0);
  let entry: { sink: EntrySink; remaining: number; pad: number; size: number; hash: ReturnType<typeof createHash> } | null = null;
  let ended = false;
  for await (const chunk of chunks) {
    buffer = buffer.length ? Buffer.concat([buffer, chunk]) : chunk;
    for (;;) {
      if (entry) {
        if (entry.remaining > 0) {
          if (!buffer.length) break;
          const part = buffer.subarray(0, Math.min(entry.remaining, buffer.length));
          buffer = buffer.subarray(part.length);
          entry.remaining -= part.length;
          entry.hash.update(part);
          await entry.sink.write(part);
          if (entry.remaining > 0) break;
          await entry.sink.end({ size: entry.size, sha256: entry.hash.digest("hex") });
        }
        const skip = Math.min(entry.pad, buffer.length);
        buffer = buffer.subarray(skip);
        entry.pad -= skip;
        if (entry.pad > 0) break;
        entry = null;
      }
      if (ended) {
        if (buffer.some((b) => b !== 0)) throw new ArchiveError("there are bytes after the end of the archive");
        buffer = Buffer.alloc(0);
        break;
      }
      if (buffer.length < BLOCK) break;
      const block = buffer.subarray(0, BLOCK);
      buffer = buffer.subarray(BLOCK);
      if (block.every((b) => b === 0)) {
        ended = true;
        continue;
      }
      const { name, size } = parseHeader(block);
      entry = { sink: await open(name, size), remaining: size, pad: padding(size).length, size, hash: createHash("sha256") };
      if (size === 0) {
        await entry.sink.end({ size: 0, sha256: entry.hash.digest("hex") });
        entry.remaining = 0;
      }
    }
  }
  if (!ended || entry) throw new ArchiveError("the archive ends early (the file is truncated)");
}

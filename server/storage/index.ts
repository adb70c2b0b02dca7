import { randomBytes } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdir, rename, rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { Readable } from "node:stream";
import { config } from "../config";

// File bytes behind a small interface: a local directory under DATA_DIR by default (memory
// when DATA_DIR is ":memory:"). An S3-compatible store implements the same methods.

/** What put stores: bytes at hand, or chunks as they arrive (an upload being read). */
export type BlobSource = Uint8Array | Iterable<Uint8Array> | AsyncIterable<Uint8Array>;

export interface Storage {
  /** Stores the blob. If the source fails (e.g. an upload over the limit), nothing is left under key. */
  put(key: string, source: BlobSource): Promise<void>;
  /** The blob as a stream of chunks with its size, or null when there is none. */
  open(key: string): Promise<{ size: number; stream: Readable } | null>;
  delete(key: string): Promise<void>;
}

export function localStorage(root: string): Storage {
  const file = (key: string) => {
    if (!/^[A-Za-z0-9_./-]+$/.test(key) || key.includes("..")) throw new Error(`invalid storage key ${key}`);
    return path.join(root, key);
  };
  const missing = (err: unknown) => (err as NodeJS.ErrnoException).code === "ENOENT";
  return {
    async put(key, source) {
      const target = file(key);
      await mkdir(path.dirname(target), { recursive: true });
      // Written beside the target and renamed into place, so a reader never sees half a file
      // and a failed upload leaves nothing under the key.
      const partial = `${target}.${randomBytes(6).toString("hex")}.part`;
      try {
        await writeFile(partial, source);
        await rename(partial, target);
      } catch (err) {
        await rm(partial, { force: true });
        throw err;
      }
    },
    async open(key) {
      try {
        const { size } = await stat(file(key));
        return { size, stream: createReadStream(file(key)) };
      } catch (err) {
        if (missing(err)) return null;
        throw err;
      }
    },
    async delete(key) {
      await rm(file(key), { force: true });
    },
  };
}

export function memoryStorage(): Storage {
  const blobs = new Map<string, Buffer>();
  return {
    async put(key, source) {
      if (source instanceof Uint8Array) {
        blobs.set(key, Buffer.from(source));
        return;
      }
      const chunks: Uint8Array[] = [];
      for await (const chunk of source) chunks.push(chunk);
      blobs.set(key, Buffer.concat(chunks));
    },
    async open(key) {
      const bytes = blobs.get(key);
      return bytes ? { size: bytes.byteLength, stream: Readable.from([bytes]) } : null;
    },
    async delete(key) {
      blobs.delete(key);
    },
  };
}

let instance: Storage | undefined;

export function storage(): Storage {
  const dir = config().dataDir;
  instance ??= dir ? localStorage(path.join(dir, "files")) : memoryStorage();
  return instance;
}

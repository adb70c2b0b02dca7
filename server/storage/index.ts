import { randomBytes } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdir, rename, rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { Readable } from "node:stream";
import { buffer } from "node:stream/consumers";
import { config } from "../kernel/config";
import { s3Storage } from "./s3";
import type { Storage } from "./storage-interface";
import { withTimeout } from "../kernel/timeout";

export type { BlobSource, Storage } from "./storage-interface";

const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err)).replace(/\s+/g, " ");

export function localStorage(root: string): Storage {
  const file = (key: string) => {
    if (!/^[A-Za-z0-9_./-]+$/.test(key) || key.includes("..")) throw new Error(`invalid storage key ${key}`);
    return path.join(/*turbopackIgnore: true*/ root, key);
  };
  const missing = (err: unknown) => (err as NodeJS.ErrnoException).code === "ENOENT";
  return {
    async put(key, source) {
      const target = file(key);
      await mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
      // Renamed into place: a reader never sees half a file, a failed upload leaves nothing.
      const partial = `${target}.${randomBytes(6).toString("hex")}.part`;
      try {
        await writeFile(partial, source, { mode: 0o600 });
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
    explain: (err) => `local directory ${root}: ${messageOf(err)}`,
  };
}

function memoryStorage(): Storage {
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
    explain: (err) => `memory: ${messageOf(err)}`,
  };
}

let instance: Storage | undefined;

export function storage(): Storage {
  const location = config().storage;
  instance ??= location.kind === "s3" ? s3Storage(location) : location.kind === "local" ? localStorage(location.root) : memoryStorage();
  return instance;
}

export function resetStorage(): void {
  instance = undefined;
}

export async function checkStorage(options: { timeoutMs?: number } = {}): Promise<void> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const store = storage();
  const key = `_health/${randomBytes(8).toString("hex")}`;
  const probe = randomBytes(32);
  const check = async () => {
    await store.put(key, probe);
    const blob = await store.open(key);
    if (!blob) throw new Error("the probe object just written is missing");
    if (!(await buffer(blob.stream)).equals(probe)) throw new Error("the probe object reads back different bytes");
    await store.delete(key);
  };
  try {
    await withTimeout(check(), timeoutMs, `did not answer within ${timeoutMs / 1000} s`);
  } catch (err) {
    throw new Error(`STORAGE_URL: ${store.explain(err)}`);
  }
}

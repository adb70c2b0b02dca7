import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { config } from "../config";

// File bytes behind a small interface: a local directory under DATA_DIR by default (memory
// when DATA_DIR is ":memory:"). An S3-compatible store implements the same three methods.

export interface Storage {
  put(key: string, bytes: Uint8Array): Promise<void>;
  get(key: string): Promise<Buffer | null>;
  delete(key: string): Promise<void>;
}

export function localStorage(root: string): Storage {
  const file = (key: string) => {
    if (!/^[A-Za-z0-9_./-]+$/.test(key) || key.includes("..")) throw new Error(`invalid storage key ${key}`);
    return path.join(root, key);
  };
  return {
    async put(key, bytes) {
      await mkdir(path.dirname(file(key)), { recursive: true });
      await writeFile(file(key), bytes);
    },
    async get(key) {
      try {
        return await readFile(file(key));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
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
    async put(key, bytes) {
      blobs.set(key, Buffer.from(bytes));
    },
    async get(key) {
      return blobs.get(key) ?? null;
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

import type { Readable } from "node:stream";

// The storage interface, apart from the stores (index.ts: local and memory; s3.ts), which all
// implement it.

/** What put stores: bytes at hand, or chunks as they arrive (an upload being read). */
export type BlobSource = Uint8Array | Iterable<Uint8Array> | AsyncIterable<Uint8Array>;

export interface Storage {
  /** Stores the blob. If the source fails (e.g. an upload over the limit), nothing is left under key. */
  put(key: string, source: BlobSource): Promise<void>;
  /** The blob as a stream of chunks with its size, or null when there is none. */
  open(key: string): Promise<{ size: number; stream: Readable } | null>;
  delete(key: string): Promise<void>;
  /** One line naming the store and what an error of it means (checkStorage's message). */
  explain(err: unknown): string;
}

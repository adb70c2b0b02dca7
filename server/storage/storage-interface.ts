import type { Readable } from "node:stream";

export type BlobSource = Uint8Array | Iterable<Uint8Array> | AsyncIterable<Uint8Array>;

export interface Storage {
  /** Stores the blob. If the source fails (e.g. an upload over the limit), nothing is left under key. */
  put(key: string, source: BlobSource): Promise<void>;
  open(key: string): Promise<{ size: number; stream: Readable } | null>;
  delete(key: string): Promise<void>;
  explain(err: unknown): string;
}

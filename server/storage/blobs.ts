import { createHash } from "node:crypto";
import { ApiError } from "../kernel/errors";
import { newId } from "../kernel/ids";
import { type BlobSource, storage } from "./index";

// Bytes are stored before the File row that points at them is written, so a failed
// transaction leaves at most an unreferenced blob, never a row pointing at missing bytes.

export interface StoredBlob {
  /** The file_ ID the File row must use. */
  id: string;
  storageKey: string;
  size: number;
  sha256: string;
}

/** The file_too_large error of an upload limit of `max` bytes. */
export function fileTooLarge(max: number, hint = ""): ApiError {
  return new ApiError("file_too_large", `Files may be at most ${max} bytes (${Math.round(max / 1024 / 1024)} MiB)${hint}.`);
}

/**
 * Stores bytes, or a stream of chunks as it arrives (an upload is never held in memory whole),
 * measuring and hashing on the way. A stream that passes maxBytes fails with file_too_large as
 * soon as it does, the rest unread, and nothing is kept.
 */
export async function storeBlob(source: BlobSource, maxBytes = Infinity): Promise<StoredBlob> {
  const id = newId("file");
  const storageKey = `${id.slice(-2)}/${id}`;
  const hash = createHash("sha256");
  let size = 0;
  if (source instanceof Uint8Array) {
    if (source.byteLength > maxBytes) throw fileTooLarge(maxBytes);
    size = source.byteLength;
    hash.update(source);
    await storage().put(storageKey, source);
  } else {
    const measured = async function* () {
      for await (const chunk of source) {
        size += chunk.byteLength;
        if (size > maxBytes) throw fileTooLarge(maxBytes);
        hash.update(chunk);
        yield chunk;
      }
    };
    await storage().put(storageKey, measured());
  }
  return { id, storageKey, size, sha256: hash.digest("hex") };
}

/** Removes a blob no File row came to point at (a refused or replayed upload). */
export async function discardBlob(blob: StoredBlob): Promise<void> {
  await storage().delete(blob.storageKey);
}

import { createHash } from "node:crypto";
import { ApiError } from "../kernel/errors";
import { newId } from "../kernel/ids";
import { type BlobSource, storage } from "./index";

// Bytes before the File row: a failed transaction leaves at most an unreferenced blob, never a row without bytes.

export interface StoredBlob {
  id: string;
  storageKey: string;
  size: number;
  sha256: string;
}

export function fileTooLarge(max: number, hint = ""): ApiError {
  return new ApiError("file_too_large", `Files may be at most ${max} bytes (${Math.round(max / 1024 / 1024)} MiB)${hint}.`);
}

/** An upload is never held in memory whole; past maxBytes it fails at once, the rest unread, nothing kept. */
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

export async function discardBlob(blob: StoredBlob): Promise<void> {
  await storage().delete(blob.storageKey);
}

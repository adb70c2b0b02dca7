import { createHash } from "node:crypto";
import { newId } from "../ids";
import { storage } from "./index";

// Bytes are stored before the File row that points at them is written, so a failed
// transaction leaves at most an unreferenced blob, never a row pointing at missing bytes.

export interface StoredBlob {
  /** The file_ ID the File row must use. */
  id: string;
  storageKey: string;
  size: number;
  sha256: string;
}

export async function storeBlob(bytes: Uint8Array): Promise<StoredBlob> {
  const id = newId("file");
  const blob = { id, storageKey: `${id.slice(-2)}/${id}`, size: bytes.byteLength, sha256: createHash("sha256").update(bytes).digest("hex") };
  await storage().put(blob.storageKey, bytes);
  return blob;
}

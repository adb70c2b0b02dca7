import type { Actor } from "../access/actor";
import { getDb } from "../../db";
import { ApiError, invalidParam } from "../../kernel/errors";
import type { File } from "../../generated/prisma/client";
import { type StoredBlob, storeBlob } from "../../storage/blobs";
import { storage } from "../../storage";
import { fileUrlSigner } from "../../storage/signed-urls";
import { requireIdKind } from "../access/id-params";
import { fileInScope } from "../lines/tenancy";

export const MAX_FILE_BYTES = 100 * 1024 * 1024;
const MIME = /^[\w.+-]+\/[\w.+-]+$/;

const EXTENSIONS: Record<string, string> = {
  "image/png": "png",
  "image/jpeg": "jpg",
  "image/gif": "gif",
  "image/heic": "heic",
  "image/webp": "webp",
  "video/mp4": "mp4",
  "video/quicktime": "mov",
  "audio/mpeg": "mp3",
  "audio/mp4": "m4a",
  "audio/x-m4a": "m4a",
  "audio/wav": "wav",
  "audio/x-wav": "wav",
  "audio/x-caf": "caf",
  "audio/aiff": "aiff",
  "audio/x-aiff": "aiff",
  "application/pdf": "pdf",
  "text/plain": "txt",
  "text/vcard": "vcf",
};

export function serializeFile(file: File, url: (id: string) => string) {
  return {
    object: "file" as const,
    id: file.id,
    url: url(file.id),
    filename: file.filename,
    mime_type: file.mimeType,
    size: file.size,
    created_at: file.createdAt.getTime(),
  };
}

export function mimeTypeOf(contentType: string | null): string {
  const type = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
  if (!type) return "application/octet-stream";
  if (!MIME.test(type)) throw invalidParam("Content-Type", `'${type}' is not a MIME type such as image/png.`);
  return type;
}

export function cleanFilename(raw: string | null, mimeType: string): string {
  let name = raw ?? "";
  try {
    name = decodeURIComponent(name);
  } catch {
    // not percent-encoded: keep as sent
  }
  name = name.split(/[\\/]/).pop()!.replace(/[\u0000-\u001f\u007f]/g, "").trim().slice(0, 255);
  if (name && name !== "." && name !== "..") return name;
  return `file.${EXTENSIONS[mimeType] ?? "bin"}`;
}

export function isBase64(s: string): boolean {
  let padding = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 32 || (c >= 9 && c <= 13)) continue;
    if (c === 61) {
      if (++padding > 2) return false;
      continue;
    }
    const alphabet = (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 43 || c === 47;
    if (!alphabet || padding > 0) return false;
  }
  return true;
}

const BASE64_DATA = /[A-Za-z0-9+/]+/g;

export function base64Size(s: string): number {
  let chars = 0;
  for (const [run] of s.matchAll(BASE64_DATA)) chars += run.length;
  return Math.floor((chars * 3) / 4);
}

export function* base64Chunks(s: string, sliceChars = 256 * 1024): Generator<Uint8Array> {
  let pending = "";
  for (const [run] of s.matchAll(BASE64_DATA)) {
    pending += run;
    while (pending.length >= sliceChars) {
      yield Buffer.from(pending.slice(0, sliceChars), "base64"); // sliceChars is a multiple of 4
      pending = pending.slice(sliceChars);
    }
  }
  if (pending) yield Buffer.from(pending, "base64");
}

/** The blob is the caller's to discard if this throws. */
export async function uploadFile(actor: Actor, input: { blob: StoredBlob; contentType: string | null; filename: string | null }) {
  if (input.blob.size === 0) throw new ApiError("empty_file", "The uploaded file is empty (0 bytes).");
  const mimeType = mimeTypeOf(input.contentType);
  const file = await createFileRow(actor, input.blob, mimeType, cleanFilename(input.filename, mimeType));
  return serializeFile(file, await fileUrlSigner());
}

export async function storeFile(actor: Actor, input: { bytes: Uint8Array; mimeType: string; filename: string }): Promise<File> {
  return createFileRow(actor, await storeBlob(input.bytes), input.mimeType, input.filename);
}

async function createFileRow(actor: Actor, blob: StoredBlob, mimeType: string, filename: string): Promise<File> {
  const db = await getDb();
  return db.file.create({
    data: {
      id: blob.id,
      accountId: actor.accountId,
      filename,
      mimeType,
      size: blob.size,
      sha256: blob.sha256,
      storageKey: blob.storageKey,
    },
  });
}

export async function openFileBytes(file: File): Promise<AsyncIterable<Uint8Array>> {
  const blob = await storage().open(file.storageKey);
  if (!blob) throw new Error(`the bytes of ${file.id} are missing from storage (${file.storageKey})`);
  return blob.stream;
}

/** line_not_accessible for a file received on a line the key may not use. */
export async function findFile(actor: Actor, id: string, param = "id"): Promise<File> {
  requireIdKind("file", id, param);
  const db = await getDb();
  const file = await db.file.findFirst({ where: { id, accountId: actor.accountId } });
  if (!file) throw new ApiError("file_not_found", `No file with ID '${id}'.`, { param });
  if (!(await fileInScope(actor, file.id))) {
    throw new ApiError("line_not_accessible", `File '${id}' was received on a line this API key is not allowed to use.`, { param });
  }
  return file;
}

export async function fileDownloadUrl(actor: Actor, id: string): Promise<string> {
  const file = await findFile(actor, id);
  return (await fileUrlSigner())(file.id);
}

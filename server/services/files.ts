import type { Actor } from "../auth/actor";
import { getDb } from "../db";
import { ApiError, invalidParam } from "../errors";
import type { File } from "../generated/prisma/client";
import { storeBlob } from "../storage/blobs";
import { storage } from "../storage";
import { fileUrlSigner } from "../storage/signed-urls";
import { requireIdKind } from "./id-params";

// Uploaded files (POST /v1/files): raw bytes with their Content-Type and an optional
// X-Filename, referenced later by messages and audio messages. Downloads go through signed,
// expiring URLs (GET /v1/files?id= answers 302 to one).

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

/** The file's MIME type from a Content-Type header (parameters dropped). */
export function mimeTypeOf(contentType: string | null): string {
  const type = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
  if (!type) return "application/octet-stream";
  if (!MIME.test(type)) throw invalidParam("Content-Type", `'${type}' is not a MIME type such as image/png.`);
  return type;
}

/** A safe display name: no path, no control characters, at most 255 characters. */
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

export async function uploadFile(actor: Actor, input: { bytes: Uint8Array; contentType: string | null; filename: string | null }) {
  if (input.bytes.byteLength === 0) throw new ApiError("empty_file", "The uploaded file is empty (0 bytes).");
  const mimeType = mimeTypeOf(input.contentType);
  const file = await storeFile(actor, { bytes: input.bytes, mimeType, filename: cleanFilename(input.filename, mimeType) });
  return serializeFile(file, await fileUrlSigner());
}

/** Stores bytes as a new File of the caller's account (uploads, and files the service makes). */
export async function storeFile(actor: Actor, input: { bytes: Uint8Array; mimeType: string; filename: string }): Promise<File> {
  const blob = await storeBlob(input.bytes);
  const db = await getDb();
  return db.file.create({
    data: {
      id: blob.id,
      accountId: actor.accountId,
      filename: input.filename,
      mimeType: input.mimeType,
      size: blob.size,
      sha256: blob.sha256,
      storageKey: blob.storageKey,
    },
  });
}

/** The stored bytes of a file found with findFile. */
export async function readFileBytes(file: File): Promise<Buffer> {
  const bytes = await storage().get(file.storageKey);
  if (!bytes) throw new Error(`the bytes of ${file.id} are missing from storage (${file.storageKey})`);
  return bytes;
}

/** A file of the caller's account, or file_not_found. */
export async function findFile(actor: Actor, id: string, param = "id"): Promise<File> {
  requireIdKind("file", id, param);
  const db = await getDb();
  const file = await db.file.findFirst({ where: { id, accountId: actor.accountId } });
  if (!file) throw new ApiError("file_not_found", `No file with ID '${id}'.`, { param });
  return file;
}

export async function fileDownloadUrl(actor: Actor, id: string): Promise<string> {
  const file = await findFile(actor, id);
  return (await fileUrlSigner())(file.id);
}

import { Readable } from "node:stream";
import { config } from "../../kernel/config";
import { getDb } from "../../db";
import { ApiError } from "../../kernel/errors";
import { storage } from "../../storage";
import { verifyFileUrl } from "../../storage/signed-urls";

// Uploads are the uploader's bytes under the uploader's Content-Type, and this route shares the dashboard's origin by
// default: only inert types are shown inline, everything else is a download, and every response carries a sandbox CSP
// and nosniff. FILES_PUBLIC_URL moves downloads to an origin of their own.

/** Types a browser displays without running anything from the file. SVG is not one (it runs scripts). */
const INLINE_TYPES = new Set([
  "image/png",
  "image/jpeg",
  "image/gif",
  "image/webp",
  "image/avif",
  "image/heic",
  "image/bmp",
  "audio/mpeg",
  "audio/mp4",
  "audio/x-m4a",
  "audio/aac",
  "audio/wav",
  "audio/x-wav",
  "audio/ogg",
  "audio/webm",
  "audio/x-caf",
  "audio/aiff",
  "audio/x-aiff",
  "video/mp4",
  "video/quicktime",
  "video/webm",
  "application/pdf",
]);

const MIME = /^[\w.+-]+\/[\w.+-]+$/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

const FILE_RESPONSE_CSP = "sandbox; default-src 'none'";

function fileDisposition(mimeType: string, filename: string): { contentType: string; disposition: string } {
  const type = mimeType.toLowerCase();
  const contentType = MIME.test(type) ? type : "application/octet-stream";
  const mode = INLINE_TYPES.has(contentType) ? "inline" : "attachment";
  // filename= (ASCII fallback, quotes and backslashes dropped) for old clients, filename*= (RFC 8187)
  // for the rest. A lone surrogate (possible in a name sent as JSON) would make encodeURIComponent throw.
  const ascii = filename.replace(/[^\x20-\x7e]|["\\]/g, "_");
  const utf8 = encodeURIComponent(filename.replace(LONE_SURROGATE, "\ufffd")).replace(/['()*!]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return { contentType, disposition: `${mode}; filename="${ascii}"; filename*=UTF-8''${utf8}` };
}

// A client may name any host here, but only in its own requests: a page cannot make a visitor's browser send another
// Host or X-Forwarded-Host, so a file still never renders on the dashboard's origin (and answers are private).
function requestHost(request: Request): string {
  const forwarded = request.headers.get("x-forwarded-host")?.split(",")[0]?.trim();
  return (forwarded || request.headers.get("host") || new URL(request.url).host).toLowerCase();
}

export async function downloadFile(request: Request, id: string): Promise<Response> {
  const filesUrl = config().FILES_PUBLIC_URL;
  if (filesUrl && requestHost(request) !== new URL(filesUrl).host.toLowerCase()) {
    // Links point at the files origin; served anywhere else (the dashboard's) they would undo its separation.
    throw new ApiError("file_not_found", `Files are served from ${filesUrl} only. Ask the API for a fresh link.`);
  }
  const url = new URL(request.url);
  if (!(await verifyFileUrl(id, url.searchParams.get("expires"), url.searchParams.get("signature")))) {
    throw new ApiError("file_not_found", "This download link is invalid or has expired. Ask the API for a fresh one.");
  }
  const db = await getDb();
  const file = await db.file.findUnique({ where: { id } });
  const blob = file ? await storage().open(file.storageKey) : null;
  if (!file || !blob) throw new ApiError("file_not_found", "No such file.");
  const { contentType, disposition } = fileDisposition(file.mimeType, file.filename);
  return new Response(Readable.toWeb(blob.stream) as ReadableStream<Uint8Array>, {
    headers: {
      "Content-Type": contentType,
      "Content-Length": String(blob.size),
      "Content-Disposition": disposition,
      "Content-Security-Policy": FILE_RESPONSE_CSP,
      "X-Content-Type-Options": "nosniff",
      "Cache-Control": "private, max-age=300",
    },
  });
}

// GET /api/files/<file_id>?expires=&signature= - download through a signed, expiring URL
import { getDb } from "@/server/db";
import { ApiError } from "@/server/errors";
import { errorResponse, newRequestId } from "@/server/http/responses";
import { storage } from "@/server/storage";
import { verifyFileUrl } from "@/server/storage/signed-urls";

export async function GET(request: Request, ctx: { params: Promise<{ id: string }> }): Promise<Response> {
  const requestId = newRequestId();
  const { id } = await ctx.params;
  const url = new URL(request.url);
  try {
    if (!(await verifyFileUrl(id, url.searchParams.get("expires"), url.searchParams.get("signature")))) {
      throw new ApiError("file_not_found", "This download link is invalid or has expired. Ask the API for a fresh one.");
    }
    const db = await getDb();
    const file = await db.file.findUnique({ where: { id } });
    const bytes = file ? await storage().get(file.storageKey) : null;
    if (!file || !bytes) throw new ApiError("file_not_found", "No such file.");
    return new Response(new Uint8Array(bytes), {
      headers: {
        "Content-Type": file.mimeType,
        "Content-Length": String(bytes.byteLength),
        "Content-Disposition": `inline; filename*=UTF-8''${encodeURIComponent(file.filename)}`,
        "Cache-Control": "private, max-age=300",
        "X-Content-Type-Options": "nosniff",
        "Request-Id": requestId,
      },
    });
  } catch (err) {
    return errorResponse(err, requestId);
  }
}

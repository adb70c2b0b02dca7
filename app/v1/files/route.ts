// POST /v1/files - upload raw bytes (Content-Type, optional X-Filename); GET /v1/files?id= - 302 to a signed download URL
import { apiRoute, routes } from "@/server/transports/http/api-route";
import { FileQuery } from "@/server/services/schemas/v1";
import { fileDownloadUrl, MAX_FILE_BYTES, mimeTypeOf, uploadFile } from "@/server/services/messaging/files";

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes({
  POST: apiRoute(
    { scope: "files:write", status: 201, upload: { maxBytes: MAX_FILE_BYTES, check: (request) => mimeTypeOf(request.headers.get("content-type")) } },
    async ({ actor, upload, request }) =>
      uploadFile(actor, {
        blob: upload!,
        contentType: request.headers.get("content-type"),
        filename: request.headers.get("x-filename"),
      }),
  ),
  GET: apiRoute({ scope: "files:read", query: FileQuery }, async ({ actor, query }) => {
    const url = await fileDownloadUrl(actor, query.id);
    return new Response(null, { status: 302, headers: { Location: url, "Cache-Control": "no-store" } });
  }),
});

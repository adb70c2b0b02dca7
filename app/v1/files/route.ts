// POST /v1/files - upload raw bytes (Content-Type, optional X-Filename); GET /v1/files?id= - 302 to a signed download URL
import { apiRoute, routes } from "@/server/http/api-route";
import { FileQuery } from "@/server/schemas/v1";
import { fileDownloadUrl, MAX_FILE_BYTES, uploadFile } from "@/server/services/files";


export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes({
  POST: apiRoute({ scope: "files:write", status: 201, rawBody: MAX_FILE_BYTES }, async ({ actor, raw, request }) =>
    uploadFile(actor, {
      bytes: raw ?? new Uint8Array(0),
      contentType: request.headers.get("content-type"),
      filename: request.headers.get("x-filename"),
    }),
  ),
  GET: apiRoute({ scope: "files:read", query: FileQuery }, async ({ actor, query }) => {
    const url = await fileDownloadUrl(actor, query.id);
    return new Response(null, { status: 302, headers: { Location: url, "Cache-Control": "no-store" } });
  }),
});

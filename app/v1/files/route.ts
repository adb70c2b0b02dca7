// POST /v1/files - upload raw bytes (Content-Type, optional X-Filename); GET /v1/files?id= - 302 to a signed download URL
import { z } from "zod";
import { apiRoute, routes } from "@/server/http/api-route";
import { fileDownloadUrl, readBody, uploadFile } from "@/server/services/files";

const FileQuery = z.object({ id: z.string().trim().min(1).max(100) });

export const { GET, POST, PUT, PATCH, DELETE, OPTIONS } = routes({
  POST: apiRoute({ scope: "files:write", status: 201 }, async ({ actor, request }) =>
    uploadFile(actor, {
      bytes: await readBody(request),
      contentType: request.headers.get("content-type"),
      filename: request.headers.get("x-filename"),
    }),
  ),
  GET: apiRoute({ scope: "files:read", query: FileQuery }, async ({ actor, query }) => {
    const url = await fileDownloadUrl(actor, query.id);
    return new Response(null, { status: 302, headers: { Location: url, "Cache-Control": "no-store" } });
  }),
});

import { z } from "zod";
import { ApiError } from "../../../kernel/errors";
import { base64Chunks, base64Size, findFile, isBase64, mimeTypeOf, uploadFile } from "../../../services/messaging/files";
import { discardBlob, storeBlob } from "../../../storage/blobs";
import { builder } from "../builder";
import { parseArgs } from "../inputs";

// Files: uploadFile (POST /v1/files, files:write) takes the bytes base64-encoded, so it is
// bounded well below the REST upload's 100 MiB; file (GET /v1/files, files:read) hands out
// a fresh signed download URL.

const MAX_GRAPHQL_UPLOAD_BYTES = 10 * 1024 * 1024;

const UploadFileArgs = z.object({
  // A one-pass check: the regex it replaces backtracked quadratically on long whitespace runs.
  content_base64: z.string().refine(isBase64, "must be base64"),
  mime_type: z.string().trim().max(255).optional(),
  filename: z.string().max(1024).optional(),
});

const FileIdArgs = z.object({ id: z.string().trim().min(1).max(100) });

builder.prismaObject("File", {
  fields: (t) => ({
    id: t.exposeID("id"),
    url: t.string({
      description: "A signed download link, valid for one hour.",
      select: { id: true },
      resolve: async (file, _args, ctx) => (await ctx.fileUrl())(file.id),
    }),
    filename: t.exposeString("filename"),
    mimeType: t.exposeString("mimeType"),
    size: t.exposeInt("size", { description: "Bytes." }),
    createdAt: t.expose("createdAt", { type: "Timestamp" }),
  }),
});

builder.queryFields((t) => ({
  file: t.prismaField({
    type: "File",
    nullable: true,
    description: "One file (file_ ID) of the account, with a fresh download URL.",
    authScopes: { scope: "files:read" },
    args: { id: t.arg.string({ required: true }) },
    resolve: async (query, _root, args, ctx) => {
      const file = await findFile(ctx.actor, parseArgs(FileIdArgs, args).id);
      return ctx.prisma.file.findUniqueOrThrow({ ...query, where: { id: file.id } });
    },
  }),
}));

builder.mutationFields((t) => ({
  uploadFile: t.prismaField({
    type: "File",
    description: "Upload a file (at most 10 MiB here; POST /v1/files takes up to 100 MiB). Its id can be sent as an attachment.",
    authScopes: { scope: "files:write" },
    args: {
      input: t.arg({
        required: true,
        type: builder.inputType("UploadFileInput", {
          fields: (f) => ({
            contentBase64: f.string({ required: true, description: "The file's bytes, base64-encoded." }),
            mimeType: f.string({ description: "e.g. image/png; application/octet-stream when omitted." }),
            filename: f.string({ description: "Display name; named after the type (file.png) when omitted." }),
          }),
        }),
      }),
    },
    resolve: async (query, _root, { input }, ctx) => {
      const args = parseArgs(UploadFileArgs, input);
      const contentType = args.mime_type ?? null;
      mimeTypeOf(contentType); // refused before anything is stored
      if (base64Size(args.content_base64) > MAX_GRAPHQL_UPLOAD_BYTES) {
        throw new ApiError("file_too_large", "Files uploaded through GraphQL may be at most 10 MiB; use POST /v1/files for larger ones.", {
          param: "content_base64",
        });
      }
      // Decoded into storage a slice at a time: the request's text is the only whole copy held.
      const blob = await storeBlob(base64Chunks(args.content_base64));
      const file = await uploadFile(ctx.actor, { blob, contentType, filename: args.filename ?? null }).catch(async (err: unknown) => {
        await discardBlob(blob); // no File row points at it
        throw err;
      });
      return ctx.prisma.file.findUniqueOrThrow({ ...query, where: { id: file.id } });
    },
  }),
}));

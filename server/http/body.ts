import { fileTooLarge } from "../storage/blobs";

/**
 * The request body as chunks, at most `max` bytes: a declared Content-Length over it is refused
 * before anything is read, and a body that grows past it is cut off (the rest unread) with
 * file_too_large.
 */
export async function* bodyChunks(request: Request, max: number, tooLarge = () => fileTooLarge(max)): AsyncGenerator<Uint8Array> {
  const declared = Number(request.headers.get("content-length") ?? "NaN");
  if (Number.isFinite(declared) && declared > max) throw tooLarge();
  if (!request.body) return;
  const reader = request.body.getReader();
  let size = 0;
  let done = false;
  try {
    for (;;) {
      const next = await reader.read();
      if (next.done) {
        done = true;
        return;
      }
      size += next.value.byteLength;
      if (size > max) throw tooLarge();
      yield next.value;
    }
  } finally {
    if (!done) await reader.cancel().catch(() => undefined);
  }
}

/** Reads a request body up to `max` bytes, failing early past it. */
export async function readBody(request: Request, max: number): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of bodyChunks(request, max)) chunks.push(chunk);
  return Buffer.concat(chunks);
}

import { ApiError } from "../errors";

/** Reads a request body up to `max` bytes, failing early past it. */
export async function readBody(request: Request, max: number): Promise<Uint8Array> {
  const tooLarge = () =>
    new ApiError("file_too_large", `Files may be at most ${max} bytes (${Math.round(max / 1024 / 1024)} MiB).`);
  const declared = Number(request.headers.get("content-length") ?? "NaN");
  if (Number.isFinite(declared) && declared > max) throw tooLarge();
  if (!request.body) return new Uint8Array(0);
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel();
      throw tooLarge();
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const c of chunks) {
    bytes.set(c, offset);
    offset += c.byteLength;
  }
  return bytes;
}

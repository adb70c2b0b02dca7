import type { IncomingMessage } from "node:http";
import { config } from "../../kernel/config";
import { ApiError } from "../../kernel/errors";
import { fileTooLarge } from "../../storage/blobs";

// Request bodies are read with a cap, enforced while streaming: a body over it is refused
// (413) from its Content-Length without reading it, or as soon as the bytes read pass the
// cap, and the rest is never read or buffered.

type TooLargeCode = "file_too_large" | "request_too_large";

const mib = (bytes: number) => `${Math.round((bytes / 1024 / 1024) * 10) / 10} MiB`;

function tooLarge(code: TooLargeCode, max: number): ApiError {
  return code === "file_too_large"
    ? fileTooLarge(max)
    : new ApiError("request_too_large", `Request bodies may be at most ${max} bytes (${mib(max)}).`);
}

/** The largest JSON request body (MAX_JSON_BODY_BYTES). */
export const jsonBodyLimit = () => config().MAX_JSON_BODY_BYTES;

/**
 * The request body as chunks, at most `max` bytes: a declared Content-Length over it is refused
 * before anything is read, and a body that grows past it is cut off (the rest unread).
 */
export async function* bodyChunks(request: Request, max: number, tooBig = () => fileTooLarge(max)): AsyncGenerator<Uint8Array> {
  const declared = Number(request.headers.get("content-length") ?? "NaN");
  if (Number.isFinite(declared) && declared > max) throw tooBig();
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
      if (size > max) throw tooBig();
      yield next.value;
    }
  } finally {
    if (!done) await reader.cancel().catch(() => undefined);
  }
}

/** Chunks of `size` bytes in all, copied once into a buffer of the exact size (Buffer.concat and then a typed copy would be two). */
function joined(chunks: Uint8Array[], size: number): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}

/** Thrown while reading a body whose client went away before sending all of it: there is no one to answer. */
export class ClientGone extends Error {
  constructor() {
    super("the client closed the connection before sending the whole body");
    this.name = "ClientGone";
  }
}

/**
 * A Node request's body (the routes the production server answers without Next: see
 * fast-routes.ts), with the same cap and errors as readBody: a declared Content-Length over
 * `max` is refused before anything is read, a body that grows past it as soon as it does.
 */
export function readNodeBody(req: IncomingMessage, max: number, code: TooLargeCode = "file_too_large"): Promise<Uint8Array<ArrayBuffer>> {
  const declared = Number(req.headers["content-length"] ?? "NaN");
  if (Number.isFinite(declared) && declared > max) return Promise.reject(tooLarge(code, max));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (err: Error | null) => {
      req.off("data", onData).off("end", onEnd).off("error", onGone).off("close", onGone);
      if (err) return reject(err);
      resolve(joined(chunks, size));
    };
    const onData = (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size > max) {
        req.pause(); // the rest is drained after the answer (node-web.ts endWithUnreadBody)
        return done(tooLarge(code, max));
      }
      chunks.push(chunk);
    };
    const onEnd = () => done(null);
    const onGone = () => done(new ClientGone());
    req.on("data", onData).on("end", onEnd).on("error", onGone).on("close", onGone);
  });
}

/** Reads a request body up to `max` bytes, failing early past it. */
export async function readBody(request: Request, max: number, code: TooLargeCode = "file_too_large"): Promise<Uint8Array<ArrayBuffer>> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of bodyChunks(request, max, () => tooLarge(code, max))) {
    chunks.push(chunk);
    size += chunk.byteLength;
  }
  return joined(chunks, size);
}

/** A request body as text, at most `max` bytes (request_too_large past it). */
export async function readText(request: Request, max: number): Promise<string> {
  // A body with a Content-Length within the cap is read whole: the HTTP parser delivers no
  // byte beyond Content-Length, so nothing is left to enforce while streaming.
  const declared = Number(request.headers.get("content-length") ?? "NaN");
  if (Number.isFinite(declared) && declared <= max && request.body && !request.headers.has("transfer-encoding")) return request.text();
  return new TextDecoder().decode(await readBody(request, max, "request_too_large"));
}

/**
 * The same request with its body read (at most `max` bytes) and held in memory, for handlers
 * of libraries that would otherwise buffer a body of any size (tRPC, next-auth).
 */
export async function boundedRequest(request: Request, max: number): Promise<Request> {
  if (!request.body) return request;
  const body = await readBody(request, max, "request_too_large");
  return new Request(request.url, { method: request.method, headers: request.headers, body, signal: request.signal });
}

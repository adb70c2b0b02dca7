import type { IncomingMessage } from "node:http";
import { config } from "../../kernel/config";
import { ApiError } from "../../kernel/errors";
import { fileTooLarge } from "../../storage/blobs";

type TooLargeCode = "file_too_large" | "request_too_large";

const mib = (bytes: number) => `${Math.round((bytes / 1024 / 1024) * 10) / 10} MiB`;

function tooLarge(code: TooLargeCode, max: number): ApiError {
  return code === "file_too_large"
    ? fileTooLarge(max)
    : new ApiError("request_too_large", `Request bodies may be at most ${max} bytes (${mib(max)}).`);
}

export const jsonBodyLimit = () => config().MAX_JSON_BODY_BYTES;

/** A Content-Length over `max` is refused unread, a body growing past it cut off (the rest unread). */
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

/** One copy into a buffer of the exact size (Buffer.concat and then a typed copy would be two). */
function joined(chunks: Uint8Array[], size: number): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}

/** The client went away before sending the whole body: there is no one to answer. */
export class ClientGone extends Error {
  constructor() {
    super("the client closed the connection before sending the whole body");
    this.name = "ClientGone";
  }
}

/** readBody on a Node request (fast-routes.ts), with the same cap and errors. */
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

export async function readBody(request: Request, max: number, code: TooLargeCode = "file_too_large"): Promise<Uint8Array<ArrayBuffer>> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of bodyChunks(request, max, () => tooLarge(code, max))) {
    chunks.push(chunk);
    size += chunk.byteLength;
  }
  return joined(chunks, size);
}

export async function readText(request: Request, max: number): Promise<string> {
  // Read whole within a declared cap: the HTTP parser delivers no byte beyond Content-Length.
  const declared = Number(request.headers.get("content-length") ?? "NaN");
  if (Number.isFinite(declared) && declared <= max && request.body && !request.headers.has("transfer-encoding")) return request.text();
  return new TextDecoder().decode(await readBody(request, max, "request_too_large"));
}

/** The body held in memory (at most `max`), for libraries that would buffer any size (tRPC, next-auth). */
export async function boundedRequest(request: Request, max: number): Promise<Request> {
  if (!request.body) return request;
  const body = await readBody(request, max, "request_too_large");
  return new Request(request.url, { method: request.method, headers: request.headers, body, signal: request.signal });
}

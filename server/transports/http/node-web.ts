import type { IncomingMessage, ServerResponse } from "node:http";
import { Readable } from "node:stream";
import type { TLSSocket } from "node:tls";

// Node's request and response as the web Request and Response route files take and give, for
// the routes the production server answers before Next (fast-routes.ts): the route file's own
// handler runs, on the same Request it would get from Next (URL on the listener's origin, the
// headers, the body as a stream, a signal that aborts when the client goes away).

/** The request's headers as web Headers; a value Headers refuses is left out (Next's adapter drops it too). */
export function webHeaders(req: IncomingMessage): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    try {
      for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
    } catch {
      // not a ByteString
    }
  }
  return headers;
}

/**
 * The request's URL as Next builds it: the scheme of the socket or X-Forwarded-Proto, a fixed
 * host (`localhost` and the listener's port, as `next start` without -H), the request target as
 * sent. Never the Host header: a client
 * writes that, and `Host: h?limit=1&x=` or `Host: a#b` would otherwise move the target's path
 * and query into another part of the URL, so the handler (and the read cache, keyed by path
 * and query) would read something other than the request. Null when the target makes no URL
 * (Next answers those).
 */
export function requestUrl(req: IncomingMessage): string | null {
  const encrypted = (req.socket as Partial<TLSSocket>).encrypted === true;
  const proto = encrypted || String(req.headers["x-forwarded-proto"] ?? "").includes("https") ? "https" : "http";
  const target = req.url ?? "/";
  if (!target.startsWith("/")) return null;
  const url = `${proto}://localhost:${req.socket.localPort ?? 80}${target}`;
  return URL.canParse(url) ? url : null;
}

/**
 * The request's body as a web stream. A route that stops reading it (a body over its cap) only
 * lets go of it: Readable.toWeb's own cancel would destroy the request, and with it the socket
 * the answer has yet to go out on (sendWebResponse drains the rest instead).
 */
function bodyOf(req: IncomingMessage): ReadableStream<Uint8Array> {
  const reader = (Readable.toWeb(req) as ReadableStream<Uint8Array>).getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await reader.read();
      if (next.done) controller.close();
      else controller.enqueue(next.value);
    },
    cancel: () => reader.releaseLock(),
  });
}

/** The web Request of a Node request whose URL is `url` (from requestUrl); `signal` aborts it. */
export function webRequest(req: IncomingMessage, url: string, signal: AbortSignal): Request {
  const method = req.method ?? "GET";
  const body = method === "GET" || method === "HEAD" ? undefined : bodyOf(req);
  return new Request(url, { method, headers: webHeaders(req), body, duplex: "half", signal } as RequestInit);
}

/** A signal that aborts when the response's connection closes before the answer was sent. */
export function clientGoneSignal(res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  res.once("close", () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller.signal;
}

/** At most this much of a body a route left unread is read and dropped, for at most this long. */
const DRAIN = { bytes: 64 * 1024 * 1024, ms: 10_000 };

/**
 * Reads and drops the rest of a body the route left unread: a connection closed with bytes
 * unread is reset, and a client still sending its body then gets an error instead of the answer
 * (a 413, say). `done(true)` once it is all read; `done(false)` past DRAIN, whose default
 * closes the connection.
 */
function drain(req: IncomingMessage, done: (whole: boolean) => void = (whole) => void (whole || req.socket.destroy())): void {
  req.removeAllListeners("data"); // the body stream's: the route is done with it
  let bytes = 0;
  let settled = false;
  const settle = (whole: boolean) => {
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    done(whole);
  };
  const timer = setTimeout(() => settle(false), DRAIN.ms).unref();
  req.on("data", (chunk: Buffer) => {
    bytes += chunk.byteLength;
    if (bytes > DRAIN.bytes) settle(false);
  });
  req.once("end", () => settle(true));
  req.once("close", () => settle(req.complete));
  req.resume();
}

/**
 * Sends a route's Response, read whole (the routes served this way answer JSON envelopes), with
 * its Content-Length.
 */
export async function sendWebResponse(req: IncomingMessage, res: ServerResponse, response: Response): Promise<void> {
  const body = response.body ? Buffer.from(await response.arrayBuffer()) : null;
  const headers: Record<string, string | string[] | number> = {};
  response.headers.forEach((value, name) => {
    if (name !== "set-cookie") headers[name] = value;
  });
  const cookies = response.headers.getSetCookie();
  if (cookies.length) headers["set-cookie"] = cookies;
  if (body) headers["content-length"] = body.byteLength;
  endWithUnreadBody(req, res, response.status, headers, body ?? undefined);
}

/**
 * Sends an answer. A request body the route left unread (refused before it was read, e.g. 413)
 * is drained after it; one declared larger than DRAIN closes the connection with it. A client
 * that asked to close the connection (Connection: close, HTTP/1.0) gets its answer once the
 * body is read: Node ends such a connection with the answer, and bytes still arriving would
 * then reset it.
 */
export function endWithUnreadBody(req: IncomingMessage, res: ServerResponse, status: number, headers: Record<string, string | string[] | number>, body?: Buffer | string): void {
  const unread = !req.complete;
  const closing = unread && Number(req.headers["content-length"] ?? 0) > DRAIN.bytes;
  if (closing) headers.connection = "close";
  if (res.destroyed) return;
  if (!unread || closing) return void res.writeHead(status, headers).end(body);
  if (res.shouldKeepAlive) {
    res.writeHead(status, headers).end(body);
    return drain(req);
  }
  drain(req, (whole) => {
    if (res.destroyed) return;
    res.writeHead(status, headers).end(body, () => whole || req.socket.destroy());
  });
}

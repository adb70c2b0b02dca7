import type { IncomingMessage, ServerResponse } from "node:http";
import { Readable } from "node:stream";
import type { TLSSocket } from "node:tls";

/** A value Headers refuses (not a ByteString) is left out, as Next's adapter does. */
export function webHeaders(req: IncomingMessage): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    try {
      for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
    } catch {}
  }
  return headers;
}

// As Next builds it, on `localhost:<port>`, never the Host header: a client writes that, and
// `Host: h?limit=1&x=` would move the target's path and query (the read cache's key) elsewhere.
export function requestUrl(req: IncomingMessage): string | null {
  const encrypted = (req.socket as Partial<TLSSocket>).encrypted === true;
  const proto = encrypted || String(req.headers["x-forwarded-proto"] ?? "").includes("https") ? "https" : "http";
  const target = req.url ?? "/";
  if (!target.startsWith("/")) return null;
  const url = `${proto}://localhost:${req.socket.localPort ?? 80}${target}`;
  return URL.canParse(url) ? url : null;
}

// Cancelling only lets go: Readable.toWeb's own cancel destroys the socket the answer (a 413) has
// yet to go out on; the rest is drained after it.
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

export function webRequest(req: IncomingMessage, url: string, signal: AbortSignal): Request {
  const method = req.method ?? "GET";
  const body = method === "GET" || method === "HEAD" ? undefined : bodyOf(req);
  return new Request(url, { method, headers: webHeaders(req), body, duplex: "half", signal } as RequestInit);
}

export function clientGoneSignal(res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  res.once("close", () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller.signal;
}

const DRAIN = { bytes: 64 * 1024 * 1024, ms: 10_000 };

// A connection closed with body bytes unread is reset, and a client still sending gets an error
// instead of the answer (a 413): so the rest is read and dropped, up to DRAIN.
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

/** Read whole (these routes answer JSON envelopes), sent with its Content-Length. */
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

// An unread body is drained after the answer (declared over DRAIN, the connection closes). A
// connection that will close (Connection: close, HTTP/1.0) is answered once the body is read:
// Node ends it with the answer, and bytes still arriving would reset it.
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

// fetch over node:http(s) behind an address guard, for the URLs account owners choose (provider
// servers, webhook receivers): the URL is checked first (a literal address gets no lookup), and
// the connection's own lookup refuses forbidden addresses, so a socket goes only to an address
// that was judged, even when a name resolves elsewhere later (DNS rebinding). Redirects are
// never followed; keep-alive pools are per guard (a pooled socket was judged when it opened).

import http from "node:http";
import https from "node:https";
import type net from "node:net";
import { Readable } from "node:stream";
import type { FetchLike } from "./exchange";
import { unbracketed } from "./url-guard";

export interface Guard {
  /** Parses and judges a URL; throws (ForbiddenAddressError, code EFORBIDDENADDRESS, for a destination not allowed). */
  check(url: string): URL;
  /** The connection's lookup (guardedLookup), judged per request. */
  lookup(): net.LookupFunction;
  /** What a refused destination is called in errors, with what the operator can do about it. */
  forbidden: string;
  /** What the URLs are, for errors ("provider URL"). */
  what: string;
  /** Sockets per host in the keep-alive pool (default: unbounded). */
  maxSockets?: number;
}

const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

const refused = (guard: Guard) => Object.assign(new Error(guard.forbidden), { code: "EFORBIDDENADDRESS" });
const isRefusal = (err: unknown) => (err as { code?: unknown } | null)?.code === "EFORBIDDENADDRESS";

/** A FetchLike that sends only where `guard` allows; the body is a string or FormData. */
export function guardedFetch(guard: Guard): FetchLike {
  const poolOptions = { keepAlive: true, ...(guard.maxSockets ? { maxSockets: guard.maxSockets } : {}) };
  const agents = { "http:": new http.Agent(poolOptions), "https:": new https.Agent(poolOptions) };

  return async (url, init) => {
    let target: URL;
    try {
      target = guard.check(url);
    } catch (err) {
      if (isRefusal(err)) throw refused(guard);
      throw Object.assign(new Error(`invalid ${guard.what}: ${(err as Error).message}`), { code: "ERR_INVALID_URL" });
    }
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((value, name) => {
      headers[name] = value;
    });
    let body: Readable | string | null = null;
    if (init.body instanceof FormData) {
      const encoded = new Response(init.body);
      headers["content-type"] = encoded.headers.get("content-type")!;
      body = Readable.fromWeb(encoded.body! as import("node:stream/web").ReadableStream<Uint8Array>);
    } else if (typeof init.body === "string") {
      body = init.body;
    } else if (init.body != null) {
      throw new TypeError("guardedFetch: the body must be a string or FormData");
    }
    const protocol = target.protocol as keyof typeof agents;
    return new Promise<Response>((resolve, reject) => {
      const req = (protocol === "https:" ? https : http).request({
        protocol,
        hostname: unbracketed(target.hostname),
        port: target.port || undefined,
        path: target.pathname + target.search,
        method: init.method ?? "GET",
        headers,
        agent: agents[protocol],
        lookup: guard.lookup(),
        signal: init.signal ?? undefined,
      });
      req.on("error", (err) => reject(isRefusal(err) ? refused(guard) : err));
      req.on("response", (res) => {
        const status = res.statusCode ?? 0;
        const answer = new Headers();
        for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) {
          try {
            answer.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
          } catch {
            // a header value fetch would not accept either: left out
          }
        }
        try {
          const stream = NULL_BODY_STATUSES.has(status) || req.method === "HEAD" ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>);
          if (!stream) res.resume();
          resolve(new Response(stream, { status, headers: answer }));
        } catch (err) {
          res.destroy();
          reject(err);
        }
      });
      if (body instanceof Readable) {
        body.on("error", (err) => req.destroy(err));
        body.pipe(req);
      } else {
        req.end(body ?? undefined);
      }
    });
  };
}

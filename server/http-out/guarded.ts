// The URL is checked first, then the connection's own lookup refuses forbidden addresses, so a
// socket goes only to an address that was judged. Keep-alive pools are per guard: a pooled socket
// was judged when it opened.

import http from "node:http";
import https from "node:https";
import type net from "node:net";
import { Readable } from "node:stream";
import type { Answer, AnswerHeaders, Transport } from "./exchange";
import { unbracketed } from "./url-guard";

export interface Guard {
  check(url: string): URL;
  lookup(): net.LookupFunction;
  forbidden: string;
  maxSockets?: number;
}

const refused = (guard: Guard) => Object.assign(new Error(guard.forbidden), { code: "EFORBIDDENADDRESS" });
const isRefusal = (err: unknown) => (err as { code?: unknown } | null)?.code === "EFORBIDDENADDRESS";

function headersOf(res: http.IncomingMessage): AnswerHeaders {
  return {
    get(name) {
      const value = res.headers[name.toLowerCase()];
      return value === undefined ? null : Array.isArray(value) ? value.join(", ") : value;
    },
  };
}

export function guardedTransport(guard: Guard): Transport {
  const poolOptions = { keepAlive: true, ...(guard.maxSockets ? { maxSockets: guard.maxSockets } : {}) };
  const agents = { "http:": new http.Agent(poolOptions), "https:": new https.Agent(poolOptions) };

  return (url, request) => {
    let req: http.ClientRequest | null = null;
    const answer = new Promise<Answer>((resolve, reject) => {
      let target: URL;
      try {
        target = guard.check(url);
      } catch (err) {
        if (isRefusal(err)) return reject(refused(guard));
        return reject(Object.assign(new Error((err as Error).message), { code: "ERR_INVALID_URL" })); // the check's own words
      }
      let headers = request.headers ?? {};
      let body: Readable | string | null = null;
      if (request.body instanceof FormData) {
        const encoded = new Response(request.body);
        headers = { ...headers, "content-type": encoded.headers.get("content-type")! };
        body = Readable.fromWeb(encoded.body! as import("node:stream/web").ReadableStream<Uint8Array>);
      } else if (typeof request.body === "string") {
        body = request.body;
      }
      const protocol = target.protocol as keyof typeof agents;
      const sent = (protocol === "https:" ? https : http).request({
        protocol,
        hostname: unbracketed(target.hostname),
        port: target.port || undefined,
        path: target.pathname + target.search,
        method: request.method,
        headers,
        agent: agents[protocol],
        lookup: guard.lookup(),
      });
      req = sent;
      sent.on("error", (err) => reject(isRefusal(err) ? refused(guard) : err));
      sent.on("response", (res) => resolve({ status: res.statusCode ?? 0, headers: headersOf(res), body: res }));
      if (body instanceof Readable) {
        body.on("error", (err) => sent.destroy(err));
        body.pipe(sent);
      } else {
        sent.end(body ?? undefined);
      }
    });
    // Destroyed without an error: node reports the request's own failure ("socket hang up"), and a
    // socket that emits one may no longer have a listener.
    return { answer, abort: () => req?.destroy() };
  };
}

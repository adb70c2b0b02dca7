import http from "node:http";
import https from "node:https";
import { performance } from "node:perf_hooks";
import { parseRetryAfter } from "../kernel/retry-after";
import { checkWebhookUrl, guardedLookup, unbracketed } from "./url-guard";

/**
 * How many deliveries of one webhook may be in flight at once (also the keep-alive pool's
 * sockets per receiving host): a slow or stalled receiver holds at most this many of the
 * sender's slots, so it cannot delay other webhooks' deliveries.
 */
export const MAX_IN_FLIGHT_PER_WEBHOOK = 64;

export interface PostResult {
  /** A 2xx response. */
  ok: boolean;
  /** null when no response arrived. */
  statusCode: number | null;
  durationMs: number;
  /** The first maxResponseBytes of the response body (UTF-8); null when no response arrived. */
  responseExcerpt: string | null;
  /** Why no response arrived (network, TLS, time-out, refused URL); null when one did. */
  error: string | null;
  /** From Retry-After (seconds or HTTP date), on 429 and 503 only. */
  retryAfterMs: number | null;
  /** 410 Gone: the receiver asks for the webhook to be disabled. */
  gone: boolean;
}

export interface PostOptions {
  timeoutMs?: number;
  allowInsecure: boolean;
  maxResponseBytes?: number;
}

const USER_AGENT = "Relay-Webhooks/1.0";

// One keep-alive pool per protocol, shared by all deliveries: most webhooks point at a few
// receivers, and reusing their connections saves a TCP + TLS handshake per delivery. A pooled
// socket was checked by guardedLookup when it was opened. Sockets per receiving host match the
// sender's in-flight limit per webhook.
const agents = {
  "http:": new http.Agent({ keepAlive: true, maxSockets: MAX_IN_FLIGHT_PER_WEBHOOK }),
  "https:": new https.Agent({ keepAlive: true, maxSockets: MAX_IN_FLIGHT_PER_WEBHOOK }),
};

function describeError(err: Error): string {
  // Happy eyeballs (several addresses tried) reports an AggregateError of the attempts.
  const first: NodeJS.ErrnoException = err instanceof AggregateError && err.errors[0] instanceof Error ? err.errors[0] : err;
  switch (first.code) {
    case "ECONNREFUSED":
      return "connection refused";
    case "ECONNRESET":
      return "connection reset";
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return `host not found (${first.code})`;
    case "EHOSTUNREACH":
    case "ENETUNREACH":
      return "host unreachable";
    default:
      return first.message || String(first.code ?? "request failed");
  }
}

/**
 * POSTs one delivery. Never throws: network failures come back in `error`. Redirects are not
 * followed (a 3xx is a failed delivery), so a receiver cannot bounce us to another host.
 */
export async function postWebhook(
  url: string,
  rawBody: string,
  headers: Record<string, string>,
  { timeoutMs = 15_000, allowInsecure, maxResponseBytes = 1024 }: PostOptions,
): Promise<PostResult> {
  const start = performance.now();
  const result = (fields: Partial<PostResult>): PostResult => ({
    ok: false,
    statusCode: null,
    durationMs: Math.round(performance.now() - start),
    responseExcerpt: null,
    error: null,
    retryAfterMs: null,
    gone: false,
    ...fields,
  });

  let target: URL;
  try {
    // Checked again at delivery time (settings may have changed since the URL was saved). This
    // also judges a literal-IP host, for which the connection does no lookup.
    target = checkWebhookUrl(url, { allowInsecure });
  } catch (err) {
    return result({ error: (err as Error).message });
  }

  return new Promise<PostResult>((resolve) => {
    let settled = false;
    const finish = (r: PostResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(r);
    };

    const protocol = target.protocol as keyof typeof agents;
    const req = (protocol === "https:" ? https : http).request({
      protocol,
      hostname: unbracketed(target.hostname),
      port: target.port || undefined,
      path: target.pathname + target.search,
      method: "POST",
      agent: agents[protocol],
      lookup: guardedLookup(allowInsecure),
      headers: {
        ...headers,
        "User-Agent": USER_AGENT,
        "Content-Length": String(Buffer.byteLength(rawBody)),
      },
    });

    // One deadline for connect, request and response headers. Once the status is in, the
    // delivery's outcome is known: at the deadline the body read just stops with what it has.
    let onDeadline = () => {
      req.destroy();
      finish(result({ error: `timed out after ${timeoutMs} ms` }));
    };
    const timer = setTimeout(() => onDeadline(), timeoutMs);

    req.on("error", (err) => finish(result({ error: describeError(err) })));

    req.on("response", (res) => {
      const statusCode = res.statusCode ?? 0;
      const chunks: Buffer[] = [];
      let received = 0;
      const done = () => {
        const retryable = statusCode === 429 || statusCode === 503;
        const retryAfter = res.headers["retry-after"];
        finish(
          result({
            ok: statusCode >= 200 && statusCode < 300,
            statusCode,
            responseExcerpt: Buffer.concat(chunks).subarray(0, maxResponseBytes).toString("utf8"),
            retryAfterMs: retryable ? parseRetryAfter(retryAfter, Date.now()) : null,
            gone: statusCode === 410,
          }),
        );
      };
      onDeadline = () => {
        res.destroy();
        done();
      };
      res.on("data", (chunk: Buffer) => {
        chunks.push(chunk);
        received += chunk.length;
        // More than the excerpt needs: drop the connection rather than read a body of any size.
        if (received > maxResponseBytes) {
          res.destroy();
          done();
        }
      });
      res.on("end", done);
      // A body cut short after the status arrived still leaves the outcome known.
      res.on("error", done);
    });

    req.end(rawBody);
  });
}

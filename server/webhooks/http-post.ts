import { performance } from "node:perf_hooks";
import { exchange, retryAfterMs, TransportError } from "../http-out/exchange";
import { guardedTransport } from "../http-out/guarded";
import { checkWebhookUrl, FORBIDDEN_DESTINATION, guardedLookup } from "../http-out/url-guard";

// The webhook sender's POST, on the outbound HTTP core (../http-out) that the provider clients
// use too: the same deadline, byte cap, Retry-After and failure reading. A delivery's outcome is
// its status line, so the answer is read with `statusDecides`: the body is only an excerpt.

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

// Two guarded transports, one per setting of allowInsecure (local development lets http and local targets
// through); each keeps one keep-alive pool per protocol, shared by all deliveries, with sockets
// per receiving host matching the sender's in-flight limit per webhook.
const senders = new Map(
  [false, true].map((allowInsecure) => [
    allowInsecure,
    guardedTransport({
      check: (url) => checkWebhookUrl(url, { allowInsecure }),
      lookup: () => guardedLookup(allowInsecure),
      forbidden: FORBIDDEN_DESTINATION,
      maxSockets: MAX_IN_FLIGHT_PER_WEBHOOK,
    }),
  ]),
);

/**
 * POSTs one delivery. Never throws: failures before an answer come back in `error`. Redirects
 * are not followed (a 3xx is a failed delivery), so a receiver cannot bounce us to another host.
 * The deadline covers connect, request and response headers; once the status is in, the
 * outcome is known and the body read just stops with what it has.
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
  // The URL is judged again at delivery time by the guarded transport (settings may have changed
  // since it was saved), and every address at connect time; a refusal's reason is the check's own words.
  try {
    const answer = await exchange(
      url,
      {
        method: "POST",
        headers: { ...headers, "User-Agent": USER_AGENT, "Content-Length": String(Buffer.byteLength(rawBody)) },
        body: rawBody,
        timeoutMs,
        maxBytes: maxResponseBytes,
        statusDecides: true,
      },
      senders.get(allowInsecure)!,
    );
    const status = answer.status;
    return result({
      ok: status >= 200 && status < 300,
      statusCode: status,
      responseExcerpt: Buffer.from(answer.body.buffer, answer.body.byteOffset, answer.body.byteLength).toString("utf8"),
      retryAfterMs: status === 429 || status === 503 ? retryAfterMs(answer.headers) : null,
      gone: status === 410,
    });
  } catch (err) {
    return result({ error: err instanceof TransportError ? err.reason : (err as Error).message });
  }
}

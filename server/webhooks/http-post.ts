import { performance } from "node:perf_hooks";
import { exchange, retryAfterMs, TransportError } from "../http-out/exchange";
import { guardedTransport } from "../http-out/guarded";
import { checkWebhookUrl, FORBIDDEN_DESTINATION, guardedLookup } from "../http-out/url-guard";

/**
 * Also the keep-alive pool's sockets per receiving host: a stalled receiver holds at most this
 * many of the sender's slots, so other webhooks' deliveries go on.
 */
export const MAX_IN_FLIGHT_PER_WEBHOOK = 64;

export interface PostResult {
  ok: boolean;
  statusCode: number | null;
  durationMs: number;
  responseExcerpt: string | null;
  error: string | null;
  retryAfterMs: number | null;
  gone: boolean;
}

export interface PostOptions {
  timeoutMs?: number;
  allowInsecure: boolean;
  maxResponseBytes?: number;
}

const USER_AGENT = "Relay-Webhooks/1.0";

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

/** Never throws. A 3xx is a failed delivery, so a receiver cannot bounce us to another host. */
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
  // Judged again at delivery time (settings may have changed since it was saved) and at connect.
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

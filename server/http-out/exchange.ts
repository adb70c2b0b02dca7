// The one outbound HTTP exchange, shared by the provider clients (server/platform/<name>/client.ts)
// and the webhook sender (server/webhooks/http-post.ts): one request under one deadline, a byte
// cap on the answer, and every failure sorted by what it proves. "network" before the request
// left (refused, DNS, a forbidden address) proves nothing was sent; a timeout or a connection
// lost later does not, so a send that failed so is "unknown" to its caller. Redirects are never
// followed: the caller decides where it may go next.
//
// Two readings of an answer: by default the whole body must arrive under the deadline and the
// cap (a provider's JSON, a media file); with `statusDecides` (a webhook delivery) the status
// line is the outcome, and the body is an excerpt: whatever arrived by the deadline, up to the
// cap, or before the connection was lost.

import { parseRetryAfter } from "./retry-after";

export type TransportFailureKind =
  /** Our deadline passed: for a send, the outcome is unknown. */
  | "timeout"
  /** The connection failed: see `sentRequest`. */
  | "network"
  /** The body is larger than the caller's cap (reading stopped there). */
  | "too_large";

export class TransportError extends Error {
  override name = "TransportError";
  constructor(
    readonly kind: TransportFailureKind,
    /** What happened and what it proves ("…; request not sent", "… (outcome unknown)"). */
    message: string,
    /** false only when the request certainly never reached the server. */
    readonly sentRequest: boolean,
    /** The network error code (ECONNREFUSED, UND_ERR_SOCKET, …), when there is one. */
    readonly code: string | null = null,
    /** The answer's HTTP status when the failure came while reading its body, else null. */
    readonly status: number | null = null,
    /** The failure in a few words for a delivery log ("connection refused", "timed out after 300 ms"). */
    readonly reason: string = message,
  ) {
    super(message);
  }
}

export interface Exchange {
  status: number;
  headers: Headers;
  /** The whole body (with `statusDecides`, what arrived of it); empty when a sink took it. */
  body: Uint8Array;
  /** What the sink returned, when one took the body. */
  sunk?: unknown;
}

/**
 * Takes a 2xx body as it arrives (a file streamed to storage, never held whole): `chunks`
 * stops with a TransportError ("too_large", "timeout", "network") at the cap, the deadline or a
 * lost connection. Whatever else the sink throws (refusing the answer by its headers, a storage
 * failure) reaches the caller as thrown. A sink that returns without reading to the end has
 * the rest of the body dropped.
 */
export type BodySink<R> = (chunks: AsyncIterable<Uint8Array>, answer: { status: number; headers: Headers }) => Promise<R>;

/** The sink that keeps the whole body in memory (small files, tests). */
export const collectBytes: BodySink<Uint8Array> = async (chunks) => {
  const parts: Uint8Array[] = [];
  for await (const c of chunks) parts.push(c);
  return Buffer.concat(parts);
};

/** What the exchange calls to send: a guarded fetch (./guarded-fetch.ts), or a test's own fetch. */
export type FetchLike = (url: string, init: RequestInit) => Promise<Response>;

export interface ExchangeInit {
  method: "GET" | "POST" | "DELETE";
  headers?: Record<string, string>;
  /** A string, or multipart form data (fetch sets its content type). */
  body?: string | FormData;
  timeoutMs: number;
  /** Bodies larger than this fail with kind "too_large"; a function gives the cap by the answer's status. */
  maxBytes: number | ((status: number) => number);
  /** Given, a 2xx body goes to it as it arrives (see BodySink) instead of into `body`. */
  sink?: BodySink<unknown>;
  /**
   * The status line is the outcome: once it is in, the deadline, the cap or a lost connection
   * only end the body, which keeps what arrived (at most maxBytes). Before it, they fail as usual.
   */
  statusDecides?: boolean;
}

/** Connect-phase failures: the request certainly never reached the server. */
const NOT_SENT_CODES = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EAI_NONAME",
  "EAI_FAIL",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EHOSTDOWN",
  "ENETDOWN",
  "EADDRNOTAVAIL",
  "UND_ERR_CONNECT_TIMEOUT",
  "EFORBIDDENADDRESS",
  "ERR_INVALID_URL",
]);

/** The innermost error of an error, its `errors` (AggregateError: happy eyeballs tried several addresses) or its causes. */
function rootError(err: unknown): unknown {
  let e: unknown = err;
  for (let depth = 0; depth < 6 && e && typeof e === "object"; depth++) {
    if (typeof (e as { code?: unknown }).code === "string" && (e as { code: string }).code) return e;
    const errors = (e as { errors?: unknown }).errors;
    if (Array.isArray(errors) && errors.length > 0) return rootError(errors[0]);
    const cause = (e as { cause?: unknown }).cause;
    if (!cause) return e;
    e = cause;
  }
  return e;
}

/** A network failure in a few words: "connection refused", "host not found (ENOTFOUND)", or the error's own message. */
function networkReason(code: string | null, root: unknown): string {
  switch (code) {
    case "ECONNREFUSED":
      return "connection refused";
    case "ECONNRESET":
      return "connection reset";
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return `host not found (${code})`;
    case "EHOSTUNREACH":
    case "ENETUNREACH":
      return "host unreachable";
  }
  const message = root instanceof Error ? root.message : String(root);
  return message || code || "request failed";
}

export function truncate(s: string, max: number): string {
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

/** Retry-After as ms (delta-seconds or an HTTP date); null when absent or unreadable. */
export function retryAfterMs(headers: Headers, now = Date.now()): number | null {
  return parseRetryAfter(headers.get("retry-after"), now);
}

/**
 * Sends one request and reads its answer under `timeoutMs` and the byte cap. Throws
 * TransportError; an HTTP error status is an answer, returned like any other.
 */
export async function exchange(url: string, init: ExchangeInit, doFetch: FetchLike): Promise<Exchange> {
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, init.timeoutMs);

  const failure = (err: unknown, status: number | null): TransportError => {
    if (err instanceof TransportError) return err;
    if (timedOut) {
      return new TransportError("timeout", `no complete answer within ${init.timeoutMs} ms (outcome unknown)`, true, null, status, `timed out after ${init.timeoutMs} ms`);
    }
    const root = rootError(err);
    const rootCode = (root as { code?: unknown } | null)?.code;
    const code = typeof rootCode === "string" && rootCode ? rootCode : null;
    const reason = networkReason(code, root);
    if (code === "EFORBIDDENADDRESS") return new TransportError("network", `${reason}; request not sent`, false, code, null, reason);
    const notSent = status === null && code !== null && NOT_SENT_CODES.has(code);
    const cause = err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err);
    const why = code ?? truncate(cause, 120);
    return notSent
      ? new TransportError("network", `could not connect (${why}); request not sent`, false, code, null, reason)
      : new TransportError("network", `connection lost ${status === null ? "during the request" : "while reading the answer"} (${why}); outcome unknown`, true, code, status, reason);
  };

  try {
    let res: Response;
    try {
      res = await doFetch(url, { method: init.method, headers: init.headers, body: init.body, signal: controller.signal, redirect: "manual" });
    } catch (err) {
      throw failure(err, null);
    }
    const cap = typeof init.maxBytes === "function" ? init.maxBytes(res.status) : init.maxBytes;
    const tooLarge = () => new TransportError("too_large", `answer larger than ${cap} bytes (HTTP ${res.status})`, true, null, res.status);
    const declared = Number(res.headers.get("content-length"));
    if (!init.statusDecides && Number.isFinite(declared) && declared > cap) {
      controller.abort();
      throw tooLarge();
    }
    // The body as it arrives, capped: to the sink (a 2xx with one), else held (an excerpt when the status decides).
    const reader = res.body?.getReader();
    let finished = !reader;
    async function* capped(): AsyncGenerator<Uint8Array> {
      if (!reader) return;
      let total = 0;
      for (;;) {
        let step: ReadableStreamReadResult<Uint8Array>;
        try {
          step = await reader.read();
        } catch (err) {
          if (init.statusDecides) return;
          throw failure(err, res.status);
        }
        if (step.done) {
          finished = true;
          return;
        }
        total += step.value.byteLength;
        if (total > cap) {
          if (!init.statusDecides) throw tooLarge();
          yield step.value.subarray(0, step.value.byteLength - (total - cap));
          return;
        }
        yield step.value;
      }
    }
    try {
      if (init.sink && res.status >= 200 && res.status < 300) {
        const sunk = await init.sink(capped(), { status: res.status, headers: res.headers });
        return { status: res.status, headers: res.headers, body: new Uint8Array(0), sunk };
      }
      const chunks: Uint8Array[] = [];
      let total = 0;
      for await (const chunk of capped()) {
        chunks.push(chunk);
        total += chunk.byteLength;
      }
      const body = new Uint8Array(total);
      let offset = 0;
      for (const c of chunks) {
        body.set(c, offset);
        offset += c.byteLength;
      }
      return { status: res.status, headers: res.headers, body };
    } finally {
      // A body not read to its end (over the cap, a failed read, a sink that stopped early): the rest is dropped.
      if (!finished) {
        controller.abort();
        reader?.cancel().catch(() => {});
      }
    }
  } finally {
    clearTimeout(timer);
  }
}

// One request under one deadline, a byte cap on the answer, and each failure sorted by what it
// proves (docs/architecture.md, "Outbound HTTP"): one before the request left proves nothing was
// sent; a timeout or a connection lost later does not. Redirects are never followed.

import { Readable } from "node:stream";
import { parseRetryAfter } from "./retry-after";

export type TransportFailureKind =
  /** Our deadline passed: for a send, the outcome is unknown. */
  | "timeout"
  | "network"
  | "too_large";

export class TransportError extends Error {
  override name = "TransportError";
  constructor(
    readonly kind: TransportFailureKind,
    message: string,
    /** false only when the request certainly never reached the server. */
    readonly sentRequest: boolean,
    readonly code: string | null = null,
    /** The answer's HTTP status when the failure came while reading its body, else null. */
    readonly status: number | null = null,
    readonly reason: string = message,
  ) {
    super(message);
  }
}

export type AnswerHeaders = Pick<Headers, "get">;

export interface Exchange {
  status: number;
  headers: AnswerHeaders;
  /** The whole body (with `statusDecides`, what arrived of it); empty when a sink took it. */
  body: Uint8Array;
  sunk?: unknown;
}

/**
 * Takes a 2xx body as it arrives (streamed, never held whole): `chunks` throws TransportError at
 * the cap, the deadline or a lost connection. A sink that stops early has the rest dropped.
 */
export type BodySink<R> = (chunks: AsyncIterable<Uint8Array>, answer: { status: number; headers: AnswerHeaders }) => Promise<R>;

export const collectBytes: BodySink<Uint8Array> = async (chunks) => {
  const parts: Uint8Array[] = [];
  for await (const c of chunks) parts.push(c);
  return Buffer.concat(parts);
};

export type FetchLike = (url: string, init: RequestInit) => Promise<Response>;

interface Outgoing {
  method: string;
  headers?: Record<string, string>;
  body?: string | FormData;
}

export interface Answer {
  status: number;
  headers: AnswerHeaders;
  body: Readable | null;
}

interface Sending {
  answer: Promise<Answer>;
  abort(): void;
}

export type Transport = (url: string, request: Outgoing) => Sending;

export function fetchTransport(doFetch: FetchLike): Transport {
  return (url, { method, headers, body }) => {
    const controller = new AbortController();
    const answer = doFetch(url, { method, headers, body, signal: controller.signal, redirect: "manual" }).then((res) => ({
      status: res.status,
      headers: res.headers,
      body: res.body ? Readable.fromWeb(res.body as import("node:stream/web").ReadableStream<Uint8Array>) : null,
    }));
    return { answer, abort: () => controller.abort() };
  };
}

export interface ExchangeInit {
  method: "GET" | "POST" | "DELETE";
  headers?: Record<string, string>;
  body?: string | FormData;
  timeoutMs: number;
  /** Bodies larger than this fail with kind "too_large"; a function gives the cap by the answer's status. */
  maxBytes: number | ((status: number) => number);
  sink?: BodySink<unknown>;
  /** Once the status line is in, the deadline, the cap or a lost connection only end the body. */
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

/** Happy eyeballs may have tried several addresses (an AggregateError). */
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

export function retryAfterMs(headers: AnswerHeaders, now = Date.now()): number | null {
  return parseRetryAfter(headers.get("retry-after"), now);
}

/** Throws TransportError; an HTTP error status is an answer like any other. */
export async function exchange(url: string, init: ExchangeInit, transport: Transport): Promise<Exchange> {
  let timedOut = false;
  let sending: Sending | null = null;
  const timer = setTimeout(() => {
    timedOut = true;
    sending?.abort();
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
    let res: Answer;
    try {
      sending = transport(url, { method: init.method, headers: init.headers, body: init.body });
      res = await sending.answer;
    } catch (err) {
      throw failure(err, null);
    }
    const drop = sending.abort;
    const cap = typeof init.maxBytes === "function" ? init.maxBytes(res.status) : init.maxBytes;
    const tooLarge = () => new TransportError("too_large", `answer larger than ${cap} bytes (HTTP ${res.status})`, true, null, res.status);
    const declared = Number(res.headers.get("content-length"));
    if (!init.statusDecides && Number.isFinite(declared) && declared > cap) {
      drop();
      throw tooLarge();
    }
    const body = res.body;
    if (!body) return { status: res.status, headers: res.headers, body: new Uint8Array(0) };
    if (init.sink && res.status >= 200 && res.status < 300) {
      let finished = false;
      const reader = body[Symbol.asyncIterator]() as AsyncIterator<Uint8Array>;
      const capped = async function* (): AsyncGenerator<Uint8Array> {
        let total = 0;
        for (;;) {
          let step: IteratorResult<Uint8Array>;
          try {
            step = await reader.next();
          } catch (err) {
            throw failure(err, res.status);
          }
          if (step.done) {
            finished = true;
            return;
          }
          total += step.value.byteLength;
          if (total > cap) throw tooLarge();
          yield step.value;
        }
      };
      try {
        const sunk = await init.sink(capped(), { status: res.status, headers: res.headers });
        return { status: res.status, headers: res.headers, body: new Uint8Array(0), sunk };
      } finally {
        if (!finished) drop();
      }
    }
    return { status: res.status, headers: res.headers, body: await readCapped(body, cap, init.statusDecides === true, drop, tooLarge, (err) => failure(err, res.status)) };
  } finally {
    clearTimeout(timer);
  }
}

/** By the stream's events, no iterator or promise per chunk: webhook answers are read thousands of times a second. */
function readCapped(body: Readable, cap: number, statusDecides: boolean, drop: () => void, tooLarge: () => TransportError, failed: (err: unknown) => TransportError): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    let settled = false;
    const settle = (err: TransportError | null, complete: boolean) => {
      if (settled) return;
      settled = true;
      body.off("data", onData).off("end", onEnd).off("error", onError).off("close", onClose);
      if (!complete) {
        body.on("error", () => {}); // what the dropped stream still says is of no interest
        drop();
      }
      if (err) reject(err);
      else resolve(Buffer.concat(chunks, total));
    };
    const onData = (chunk: Buffer) => {
      if (total + chunk.byteLength > cap) {
        if (!statusDecides) return settle(tooLarge(), false);
        chunks.push(chunk.subarray(0, cap - total));
        total = cap;
        return settle(null, false);
      }
      chunks.push(chunk);
      total += chunk.byteLength;
    };
    const onEnd = () => settle(null, true);
    const onError = (err: Error) => settle(statusDecides ? null : failed(err), false);
    const onClose = () => settle(statusDecides ? null : failed(Object.assign(new Error("the connection closed before the answer ended"), { code: "ECONNRESET" })), false);
    body.on("data", onData).on("end", onEnd).on("error", onError).on("close", onClose);
  });
}

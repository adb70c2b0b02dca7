// The transport for provider clients (server/platform/<name>/client.ts): one HTTP exchange
// under one deadline (connect, headers and the whole body), with a byte cap on the body and
// failures sorted by what they prove: "network" before the request left (refused, DNS) proves
// nothing was sent; a timeout or a connection lost later does not, so a send that failed so is
// "unknown" and reconciled or repeated under its idempotency key. Also here: the failure kinds
// every client reports, Retry-After, and the scrubbing of secrets from anything that came from
// the server or the network stack. Each client keeps its own error class; what a failure means
// for a send is decided by its platform layer.
//
// Every request goes through the provider address guard (providerFetch): provider URLs are
// chosen by account owners, so unless PROVIDER_ALLOW_PRIVATE is set they may not reach
// loopback, private, link-local (cloud metadata) or this service's own addresses, judged on the
// URL and again on every address the name resolves to at connect time (DNS rebinding).

import dns from "node:dns";
import http from "node:http";
import net from "node:net";
import https from "node:https";
import { Readable } from "node:stream";
import { config } from "../kernel/config";
import { checkProviderUrl, FORBIDDEN_DESTINATION, ForbiddenAddressError, guardedLookup, isForbiddenAddress, isOwnAddress, unbracketed } from "../webhooks/url-guard";
import { parseRetryAfter } from "../kernel/retry-after";

/**
 * What a failed provider call proves, the kinds every provider client's error class reports
 * (a client may add its own, such as "too_large" for downloads).
 */
export type ProviderFailureKind =
  /** Our deadline passed: the request may have been acted on (for a send, the outcome is unknown). */
  | "timeout"
  /** Refused, reset or dropped: `sentRequest` says whether it may have reached the server. */
  | "network"
  /** The server answered an error status. */
  | "http"
  /** An answer that is not what the API documents: a redirect, a body over the cap, not JSON, the wrong shape. */
  | "garbage";

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
  ) {
    super(message);
  }
}

export interface Exchange {
  status: number;
  headers: Headers;
  /** The whole body; empty when a sink took it. */
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

/** What the transport calls to send: the guarded providerFetch, or a test's own fetch. */
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

/** Why a provider URL was refused before anything was sent, for error messages and probes. */
export const FORBIDDEN_PROVIDER_DESTINATION = `${FORBIDDEN_DESTINATION}; for a provider on this machine or the local network, the operator sets PROVIDER_ALLOW_PRIVATE=true`;

/** The service's own public host names (PUBLIC_URL, FILES_PUBLIC_URL): a provider URL may not point back at it. */
function ownHosts(): string[] {
  const c = config();
  return [c.PUBLIC_URL, c.FILES_PUBLIC_URL].flatMap((u) => (u && URL.canParse(u) ? [unbracketed(new URL(u).hostname)] : []));
}

/** Checks a provider URL as the transport will (for settings schemas): a readable reason, or null when allowed. */
export function providerUrlProblem(url: string): string | null {
  try {
    checkProviderUrl(url, { allowPrivate: config().providerAllowPrivate, ownHosts: ownHosts() });
    return null;
  } catch (err) {
    return err instanceof ForbiddenAddressError ? FORBIDDEN_PROVIDER_DESTINATION : (err as Error).message;
  }
}

/**
 * What the guard will say of a provider URL's host name once resolved (when a line is
 * connected, so a name that points inside the network is refused before it is stored): a
 * readable reason, or null when allowed or when the name does not resolve now (the probe then
 * reports that). Every request checks again at connect time.
 */
export async function providerHostProblem(url: string): Promise<string | null> {
  if (config().providerAllowPrivate || !URL.canParse(url)) return null;
  const host = unbracketed(new URL(url).hostname);
  if (net.isIP(host)) return null; // a literal address is judged on the URL (providerUrlProblem)
  const addresses = await new Promise<dns.LookupAddress[]>((resolve) => dns.lookup(host, { all: true }, (err, found) => resolve(err ? [] : found)));
  return addresses.some((a) => isForbiddenAddress(a.address) || isOwnAddress(a.address)) ? FORBIDDEN_PROVIDER_DESTINATION : null;
}

// Keep-alive pools: a pooled socket was checked by guardedLookup when it was opened.
const agents = { "http:": new http.Agent({ keepAlive: true }), "https:": new https.Agent({ keepAlive: true }) };
const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

/**
 * fetch over node:http(s), through the provider address guard: the URL is checked (a literal
 * address gets no lookup), and the connection's lookup refuses forbidden addresses, so the
 * socket goes only to an address that was judged. Redirects are never followed.
 */
export const providerFetch: FetchLike = async (url, init) => {
  const allowPrivate = config().providerAllowPrivate;
  let target: URL;
  try {
    target = checkProviderUrl(url, { allowPrivate, ownHosts: ownHosts() });
  } catch (err) {
    if (err instanceof ForbiddenAddressError) throw err;
    throw Object.assign(new Error(`invalid provider URL: ${(err as Error).message}`), { code: "ERR_INVALID_URL" });
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
    throw new TypeError("providerFetch: the body must be a string or FormData");
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
      lookup: guardedLookup(allowPrivate),
      signal: init.signal ?? undefined,
    });
    req.on("error", reject);
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


/** The first string `code` on an error, its `errors` (AggregateError) or its causes. */
function errorCode(err: unknown): string | null {
  let e: unknown = err;
  for (let depth = 0; depth < 6 && e && typeof e === "object"; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && code) return code;
    const errors = (e as { errors?: unknown }).errors;
    if (Array.isArray(errors) && errors.length > 0) {
      const inner = errorCode(errors[0]);
      if (inner) return inner;
    }
    e = (e as { cause?: unknown }).cause;
  }
  return null;
}

/** Retry-After as ms (delta-seconds or an HTTP date); null when absent or unreadable. */
export function retryAfterMs(headers: Headers, now = Date.now()): number | null {
  return parseRetryAfter(headers.get("retry-after"), now);
}

/** The media type of a Content-Type header, lowercased, without parameters. */
export function mediaType(headers: Headers): string | null {
  const essence = headers.get("content-type")?.split(";")[0]?.trim().toLowerCase();
  return essence || null;
}

/**
 * Whether a media type is one a message attachment may have (MMS media: images, audio, video,
 * PDF, contact and calendar cards): what a provider's media answer must be, so that an error
 * page, a JSON document or anything else a URL answers is never stored as a file.
 */
export function isMessageMediaType(type: string | null): boolean {
  if (!type) return false;
  if (type.startsWith("image/") || type.startsWith("audio/") || type.startsWith("video/")) return true;
  return ["application/pdf", "text/vcard", "text/x-vcard", "text/calendar", "text/csv", "text/rtf", "text/richtext", "text/directory"].includes(type);
}

/**
 * A function that replaces every secret (password, token, the Authorization value) with "***"
 * in a string that came from the server or the network stack; longer secrets first, so one
 * that contains another is replaced whole. Secrets shorter than 3 characters are left (they
 * would starve every message of its letters and hide nothing).
 */
export function scrubber(secrets: readonly (string | null | undefined)[]): (s: string) => string {
  const list = [...new Set(secrets.filter((s): s is string => !!s && s.length >= 3))].sort((a, b) => b.length - a.length);
  return (s) => list.reduce((out, secret) => out.split(secret).join("***"), s);
}

export function truncate(s: string, max: number): string {
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

/** The start of a body for an error message, on one line: scrub it first (`scrubber`), so no secret is cut in half. */
export function excerpt(text: string, max: number): string {
  return truncate(text.replace(/\s+/g, " ").trim(), max);
}

/** The first issues of a zod error, for an error message ("data.0.guid: Required; …"). */
export function issueList(issues: readonly { path: readonly PropertyKey[]; message: string }[]): string {
  return issues
    .slice(0, 3)
    .map((i) => `${i.path.map(String).join(".") || "(root)"}: ${i.message}`)
    .join("; ");
}

/**
 * Sends one request and reads its whole body under `timeoutMs`. Redirects are not followed
 * (the caller decides where it may go next). Throws TransportError; an HTTP error status is
 * an answer, returned like any other.
 */
export async function exchange(url: string, init: ExchangeInit, doFetch: FetchLike = providerFetch): Promise<Exchange> {
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, init.timeoutMs);

  const failure = (err: unknown, status: number | null): TransportError => {
    if (err instanceof TransportError) return err;
    if (timedOut) return new TransportError("timeout", `no complete answer within ${init.timeoutMs} ms (outcome unknown)`, true, null, status);
    const code = errorCode(err);
    if (code === "EFORBIDDENADDRESS") return new TransportError("network", `${FORBIDDEN_PROVIDER_DESTINATION}; request not sent`, false, code);
    const notSent = status === null && code !== null && NOT_SENT_CODES.has(code);
    const cause = err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err);
    const why = code ?? truncate(cause, 120);
    return notSent
      ? new TransportError("network", `could not connect (${why}); request not sent`, false, code)
      : new TransportError("network", `connection lost ${status === null ? "during the request" : "while reading the answer"} (${why}); outcome unknown`, true, code, status);
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
    if (Number.isFinite(declared) && declared > cap) {
      controller.abort();
      throw tooLarge();
    }
    // The body as it arrives, capped: to the sink (a 2xx with one), else held whole.
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

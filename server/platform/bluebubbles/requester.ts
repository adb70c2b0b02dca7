import { z } from "zod";
import { type BodySink, type Exchange, exchange, excerpt, issueList, mediaType, scrubber, TransportError, truncate } from "../http";
import { trimTrailingSlashes } from "../../kernel/strings";
import { type BBErrorKind, BlueBubblesError, type BlueBubblesErrorInit, redactUrl } from "./errors";

// Requests to BlueBubbles Server 1.9.9 and its JSON envelope. The password is a query parameter
// of every call (no header auth), so errors carry only the route path and every string from the
// server or the network stack is scrubbed of it.

export interface BlueBubblesConnection {
  /** Server origin, e.g. http://mac.local:1234 (a path prefix is kept; trailing slashes are stripped). */
  url: string;
  password: string;
}

export interface BlueBubblesClientOptions {
  fetch?: typeof fetch;
  /** Deadline for non-send calls (connect + response + body). Default 30 s. */
  timeoutMs?: number;
  /** Cap for JSON response bodies; larger → kind "garbage", reading stops. Default 10 MiB. */
  maxJsonBytes?: number;
}

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_MAX_JSON_BYTES = 10 * 1024 * 1024;
const EXCERPT_CHARS = 160;

const EnvelopeSchema = z.object({
  status: z.number(),
  message: z.unknown().optional(),
  error: z.unknown().optional(),
  data: z.unknown().optional(),
  metadata: z.unknown().optional(),
});
type Envelope = z.output<typeof EnvelopeSchema>;

function str(v: unknown): string | null {
  return typeof v === "string" ? v : null;
}

function envelopeDetails(env: Envelope) {
  const error = env.error && typeof env.error === "object" ? (env.error as Record<string, unknown>) : null;
  const data = env.data;
  const dataErr =
    data && typeof data === "object" && typeof (data as { error?: unknown }).error === "number"
      ? ((data as { error: number }).error)
      : null;
  return {
    errorType: str(error?.type),
    errorMessage: str(error?.message) ?? str(error?.error) ?? (typeof env.error === "string" ? env.error : null),
    envelopeMessage: str(env.message),
    dataError: dataErr,
    data,
  };
}

export interface RequestSpec {
  method: "GET" | "POST" | "DELETE";
  path: string;
  query?: Record<string, string>;
  json?: unknown;
  form?: FormData;
  timeoutMs: number;
}

export function createRequester(conn: BlueBubblesConnection, opts: BlueBubblesClientOptions) {
  let parsed: URL;
  try {
    parsed = new URL(conn.url);
  } catch {
    throw new Error("BlueBubbles URL is not a valid URL");
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw new Error("BlueBubbles URL must be http(s)");
  if (parsed.username || parsed.password) throw new Error("BlueBubbles URL must not contain credentials");
  const base = parsed.origin + trimTrailingSlashes(parsed.pathname);
  const password = conn.password;
  const doFetch = opts.fetch;
  const defaultTimeout = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxJsonBytes = opts.maxJsonBytes ?? DEFAULT_MAX_JSON_BYTES;

  // The password as it may appear in any string: raw and URL-encoded both ways.
  const scrubPassword = scrubber(password ? [password, encodeURIComponent(password), new URLSearchParams({ p: password }).toString().slice(2)] : []);
  const scrub = (s: string): string => scrubPassword(redactUrl(s));
  const quote = (text: string): string => JSON.stringify(excerpt(scrub(text), EXCERPT_CHARS));

  function buildUrl(path: string, query: Record<string, string> = {}): string {
    const url = new URL(base + path);
    for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
    url.searchParams.set("password", password);
    return url.toString();
  }

  function failure(spec: RequestSpec, kind: BBErrorKind, detail: string, extra: Partial<BlueBubblesErrorInit> = {}): BlueBubblesError {
    const operation = `${spec.method} ${spec.path}`;
    return new BlueBubblesError({ kind, operation, message: `BlueBubbles ${operation}: ${scrub(detail)}`, sentRequest: true, ...extra });
  }

  /** Every failure becomes a BlueBubblesError; with `fileCap` a 2xx body is a file capped at that, not a JSON one. */
  async function send(spec: RequestSpec, fileCap?: number, sink?: BodySink<unknown>): Promise<Exchange> {
    const headers: Record<string, string> = { accept: "application/json" };
    let body: string | FormData | undefined;
    if (spec.json !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(spec.json);
    } else if (spec.form) {
      body = spec.form;
    }
    const isFile = (status: number) => fileCap !== undefined && status >= 200 && status < 300;
    try {
      const maxBytes = (status: number) => (isFile(status) ? fileCap! : maxJsonBytes);
      return await exchange(buildUrl(spec.path, spec.query), { method: spec.method, headers, body, timeoutMs: spec.timeoutMs, maxBytes, sink }, doFetch);
    } catch (err) {
      // Only a sink throws anything else (its storage failing): passed on as it is.
      if (!(err instanceof TransportError)) throw err;
      if (err.kind === "too_large" && err.status !== null && isFile(err.status)) {
        throw failure(spec, "too_large", `attachment larger than ${fileCap} bytes`, { status: err.status });
      }
      throw failure(spec, err.kind === "too_large" ? "garbage" : err.kind, err.message, { code: err.code, sentRequest: err.sentRequest, status: err.status });
    }
  }

  function readEnvelope(spec: RequestSpec, res: Exchange): Envelope {
    const fail = (kind: BBErrorKind, detail: string, extra: Partial<BlueBubblesErrorInit> = {}) => failure(spec, kind, detail, { status: res.status, ...extra });

    if (res.status >= 300 && res.status < 400) {
      const location = res.headers.get("location");
      throw fail("garbage", `unexpected redirect (HTTP ${res.status}${location ? ` to ${redactUrl(location)}` : ""}); check the server URL`);
    }

    const text = new TextDecoder().decode(res.body);
    const type = mediaType(res.headers);

    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      if (res.status >= 400 && type === "text/plain") {
        // Koa's default body when a handler set none, e.g. POST /message/query for an unknown chatGuid → 404 "Not Found".
        const message = truncate(scrub(text).trim(), EXCERPT_CHARS) || null;
        throw fail("http", `HTTP ${res.status} ${quote(text)} (plain text)`, { envelopeMessage: message });
      }
      throw fail("garbage", `response is not JSON (HTTP ${res.status}${type ? `, ${type}` : ""}): ${quote(text)}`);
    }

    const env = EnvelopeSchema.safeParse(json);
    if (!env.success) {
      throw fail("garbage", `JSON response is not a BlueBubbles envelope (HTTP ${res.status}): ${quote(text)}`);
    }
    const raw = envelopeDetails(env.data);
    const clean = (v: string | null) => (v === null ? null : scrub(v));
    const d = {
      ...raw,
      errorType: clean(raw.errorType),
      errorMessage: clean(raw.errorMessage),
      envelopeMessage: clean(raw.envelopeMessage),
    };
    const summary = () => {
      const parts = [d.errorType, d.errorMessage].filter(Boolean).join(": ") || "no error details";
      const extras = [d.envelopeMessage ? `[${d.envelopeMessage}]` : null, d.dataError != null ? `(message error ${d.dataError})` : null]
        .filter(Boolean)
        .join(" ");
      return truncate(`${parts}${extras ? ` ${extras}` : ""}`, 400);
    };
    if (res.status >= 400) {
      throw fail("http", `HTTP ${res.status} ${summary()}`, d);
    }
    if (env.data.status >= 400) {
      throw fail("garbage", `HTTP ${res.status} but the envelope says status ${env.data.status}: ${summary()}`, d);
    }
    return env.data;
  }

  async function call<S extends z.ZodType>(spec: RequestSpec, schema: S): Promise<{ data: z.output<S>; envelope: Envelope }> {
    const res = await send(spec);
    const envelope = readEnvelope(spec, res);
    const parsed = schema.safeParse(envelope.data);
    if (!parsed.success) {
      throw failure(spec, "garbage", `unexpected data in the response (${truncate(issueList(parsed.error.issues), 300)})`, { status: res.status, data: envelope.data });
    }
    return { data: parsed.data, envelope };
  }

  return { defaultTimeout, failure, send, readEnvelope, call };
}

import type { z } from "zod";
import { TwilioError, type TwilioErrorInit } from "./errors";
import { config } from "../../kernel/config";
import { type BodySink, collectBytes, type Exchange, exchange, excerpt, isMessageMediaType, issueList, mediaType, retryAfterMs, scrubber, TransportError } from "../http";
import {
  type TwilioMedia,
  TwilioErrorBodySchema,
  type TwilioMessage,
  type TwilioMessagePage,
  TwilioMediaPageSchema,
  TwilioMessagePageSchema,
  TwilioMessageSchema,
} from "./schemas";

// Limited to what specs/twilio-messages.openapi.json keeps. Basic auth on every call, never in a URL;
// what a failure means for a send is decided in errors.ts.

export interface TwilioConnection {
  accountSid: string;
  authToken: string;
  baseUrl: string;
}

export interface TwilioClientOptions {
  fetch?: typeof fetch;
  timeoutMs?: number;
  maxJsonBytes?: number;
  /** Media on the base URL's own origin (a test double). Default: PROVIDER_MEDIA_FROM_BASE_URL, never in production. */
  mediaFromBaseUrl?: boolean;
}

export interface CreateMessageInput {
  to: string;
  from?: string;
  messagingServiceSid?: string;
  body?: string;
  /** Public URLs Twilio fetches the media from (MMS); at most 10. */
  mediaUrls?: string[];
  statusCallback?: string;
}

/** Enforces the document's `x-twilio.conditional` (which Prism does not): one of From / MessagingServiceSid, and one of Body / MediaUrl. */
export function createMessageForm(input: CreateMessageInput): URLSearchParams {
  if (!input.to) throw new TypeError("createMessageForm: To is required");
  if (!input.from === !input.messagingServiceSid) throw new TypeError("createMessageForm: exactly one of From and MessagingServiceSid is required");
  const media = input.mediaUrls ?? [];
  if (!input.body && media.length === 0) throw new TypeError("createMessageForm: a Body or a MediaUrl is required");
  if (media.length > 10) throw new TypeError("createMessageForm: at most 10 MediaUrl");
  const form = new URLSearchParams();
  form.set("To", input.to);
  if (input.from) form.set("From", input.from);
  if (input.messagingServiceSid) form.set("MessagingServiceSid", input.messagingServiceSid);
  if (input.body) form.set("Body", input.body);
  // One MediaUrl key per file: Twilio's form encoding of an array.
  for (const url of media) form.append("MediaUrl", url);
  if (input.statusCallback) form.set("StatusCallback", input.statusCallback);
  return form;
}

export interface ListMessagesQuery {
  to?: string;
  from?: string;
  /** Messages sent on or after this instant's UTC day (Twilio filters DateSent by date). */
  sentSince?: number;
  pageSize?: number;
}

export function listMessagesParams(query: ListMessagesQuery): URLSearchParams {
  const params = new URLSearchParams();
  if (query.to) params.set("To", query.to);
  if (query.from) params.set("From", query.from);
  if (query.sentSince !== undefined) {
    // Twilio compares dates only; the time is sent as midnight UTC, the form twilio-node uses.
    params.set("DateSent>", `${new Date(query.sentSince).toISOString().slice(0, 10)}T00:00:00Z`);
  }
  if (query.pageSize !== undefined) params.set("PageSize", String(Math.min(1000, Math.max(1, Math.floor(query.pageSize)))));
  return params;
}

export interface TwilioClient {
  readonly accountSid: string;
  createMessage(input: CreateMessageInput, timeoutMs: number): Promise<TwilioMessage>;
  fetchMessage(sid: string): Promise<TwilioMessage | null>;
  listMessages(query: ListMessagesQuery): Promise<TwilioMessagePage>;
  /** The page a previous page's next_page_uri names (this account's Messages.json only). */
  nextMessagePage(nextPageUri: string): Promise<TwilioMessagePage>;
  listMedia(messageSid: string): Promise<TwilioMedia[]>;
  mediaContentUrl(media: TwilioMedia): string;
  /** With the account's credentials, following Twilio's redirects to its media store; only from Twilio's https hosts, only a media answer. */
  downloadMedia<R = Uint8Array>(url: string, opts: { maxBytes: number; timeoutMs?: number; sink?: BodySink<R> }): Promise<{ content: R; mimeType: string | null }>;
}

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_DOWNLOAD_TIMEOUT_MS = 120_000;
const DEFAULT_MAX_JSON_BYTES = 10 * 1024 * 1024;
const MAX_REDIRECTS = 5;

function isTwilioHost(hostname: string): boolean {
  return /(^|\.)twilio\.com$/i.test(hostname) || /(^|\.)twiliocdn\.com$/i.test(hostname);
}

export function createTwilioClient(conn: TwilioConnection, opts: TwilioClientOptions = {}): TwilioClient {
  const base = new URL(conn.baseUrl);
  if (base.protocol !== "http:" && base.protocol !== "https:") throw new Error("Twilio base URL must be http(s)");
  const origin = base.origin;
  const accountPath = `/2010-04-01/Accounts/${encodeURIComponent(conn.accountSid)}`;
  const authorization = `Basic ${Buffer.from(`${conn.accountSid}:${conn.authToken}`, "utf8").toString("base64")}`;
  const doFetch = opts.fetch;
  const defaultTimeout = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxJsonBytes = opts.maxJsonBytes ?? DEFAULT_MAX_JSON_BYTES;
  const mediaFromBase = opts.mediaFromBaseUrl ?? config().providerMediaFromBaseUrl;

  // The token never travels in a URL, but nothing Twilio (or a proxy) echoes may carry it on.
  const scrub = scrubber([conn.authToken, authorization.slice("Basic ".length)]);
  const quote = (bytes: Uint8Array) => JSON.stringify(excerpt(scrub(new TextDecoder().decode(bytes.slice(0, 4096))), 160));

  function fail(operation: string, kind: TwilioError["kind"], detail: string, extra: Partial<TwilioErrorInit> = {}): TwilioError {
    return new TwilioError({ kind, operation, message: `Twilio ${operation}: ${scrub(detail)}`, sentRequest: true, ...extra });
  }

  function transportFailure(operation: string, err: unknown): TwilioError {
    if (err instanceof TwilioError) return err;
    if (err instanceof TransportError) {
      return fail(operation, err.kind === "too_large" ? "garbage" : err.kind, err.message, { sentRequest: err.sentRequest, networkCode: err.code, status: err.status });
    }
    return fail(operation, "network", err instanceof Error ? err.message : String(err));
  }

  function httpFailure(operation: string, res: Exchange): TwilioError {
    const text = new TextDecoder().decode(res.body);
    let details: z.output<typeof TwilioErrorBodySchema> | null = null;
    try {
      details = TwilioErrorBodySchema.safeParse(JSON.parse(text)).data ?? null;
    } catch {
      details = null;
    }
    const code = details?.code ?? null;
    const message = details?.message ? scrub(details.message) : code === null ? excerpt(scrub(text), 200) || null : null;
    const detail = code !== null ? `HTTP ${res.status}, Twilio error ${code}: ${message ?? "no message"}` : `HTTP ${res.status} ${quote(res.body)}`;
    return fail(operation, "http", detail, { status: res.status, code, twilioMessage: message, retryAfterMs: retryAfterMs(res.headers) });
  }

  async function call<S extends z.ZodType>(
    operation: string,
    url: string,
    init: { method: "GET" | "POST"; form?: URLSearchParams; timeoutMs?: number },
    schema: S,
    expected: number,
  ): Promise<z.output<S>> {
    let res: Exchange;
    try {
      const headers: Record<string, string> = { authorization, accept: "application/json" };
      if (init.form) headers["content-type"] = "application/x-www-form-urlencoded";
      res = await exchange(url, { method: init.method, headers, body: init.form?.toString(), timeoutMs: init.timeoutMs ?? defaultTimeout, maxBytes: maxJsonBytes }, doFetch);
    } catch (err) {
      throw transportFailure(operation, err);
    }
    if (res.status >= 300 && res.status < 400) throw fail(operation, "garbage", `unexpected redirect (HTTP ${res.status}); check the base URL`, { status: res.status });
    if (res.status >= 400) throw httpFailure(operation, res);
    let json: unknown;
    try {
      json = JSON.parse(new TextDecoder().decode(res.body));
    } catch {
      throw fail(operation, "garbage", `answer is not JSON (HTTP ${res.status}, ${mediaType(res.headers) ?? "no type"}): ${quote(res.body)}`, { status: res.status });
    }
    if (res.status !== expected) throw fail(operation, "garbage", `HTTP ${res.status} where ${expected} was expected: ${quote(res.body)}`, { status: res.status });
    const parsed = schema.safeParse(json);
    if (!parsed.success) {
      throw fail(operation, "garbage", `unexpected data in the answer (${issueList(parsed.error.issues)})`, { status: res.status });
    }
    return parsed.data;
  }

  const messagesUrl = (query?: URLSearchParams) => `${origin}${accountPath}/Messages.json${query && [...query].length ? `?${query}` : ""}`;

  function allowedMediaUrl(url: URL, redirect: boolean): boolean {
    if (url.origin === origin && mediaFromBase) return true;
    if (url.protocol !== "https:") return false;
    // Twilio's older media store is S3 (s3-external-1.amazonaws.com); reached only through Twilio's own redirect.
    return isTwilioHost(url.hostname) || (redirect && /\.amazonaws\.com$/i.test(url.hostname));
  }

  return {
    accountSid: conn.accountSid,

    async createMessage(input, timeoutMs) {
      return call("POST /Messages.json", messagesUrl(), { method: "POST", form: createMessageForm(input), timeoutMs }, TwilioMessageSchema, 201);
    },

    async fetchMessage(sid) {
      try {
        return await call(`GET /Messages/${sid}.json`, `${origin}${accountPath}/Messages/${encodeURIComponent(sid)}.json`, { method: "GET" }, TwilioMessageSchema, 200);
      } catch (err) {
        if (err instanceof TwilioError && err.kind === "http" && err.status === 404) return null;
        throw err;
      }
    },

    async listMessages(query) {
      return call("GET /Messages.json", messagesUrl(listMessagesParams(query)), { method: "GET" }, TwilioMessagePageSchema, 200);
    },

    async nextMessagePage(nextPageUri) {
      const url = new URL(nextPageUri, origin);
      // Only this account's list, on this base URL: a page link is followed, never an arbitrary URL.
      if (url.origin !== origin || url.pathname !== `${accountPath}/Messages.json`) {
        throw fail("GET /Messages.json", "garbage", "next_page_uri points outside this account's messages");
      }
      return call("GET /Messages.json", url.toString(), { method: "GET" }, TwilioMessagePageSchema, 200);
    },

    async listMedia(messageSid) {
      const page = await call(
        `GET /Messages/${messageSid}/Media.json`,
        `${origin}${accountPath}/Messages/${encodeURIComponent(messageSid)}/Media.json`,
        { method: "GET" },
        TwilioMediaPageSchema,
        200,
      );
      return page.media_list;
    },

    mediaContentUrl(media) {
      return new URL(media.uri.replace(/\.json$/, ""), origin).toString();
    },

    async downloadMedia<R = Uint8Array>(url: string, { maxBytes, timeoutMs, sink }: { maxBytes: number; timeoutMs?: number; sink?: BodySink<R> }) {
      const operation = "GET media";
      let target: URL;
      try {
        target = new URL(url);
      } catch {
        throw fail(operation, "refused", "the media URL is not a URL", { sentRequest: false });
      }
      if (!allowedMediaUrl(target, false)) {
        throw fail(operation, "refused", `media URL on ${target.protocol}//${target.host} refused: only Twilio's own https hosts${mediaFromBase ? ` and ${origin}` : ""} are fetched`, { sentRequest: false });
      }
      // The credentials go to the host Twilio named, never on to another one it redirects to.
      const credentialed = target.origin;
      const deadline = Date.now() + (timeoutMs ?? DEFAULT_DOWNLOAD_TIMEOUT_MS);
      const store = (sink ?? collectBytes) as BodySink<R>;
      // The answer is judged by its headers before a byte of it is kept: media, or refused.
      const mediaSink: BodySink<R> = async (chunks, answer) => {
        const type = mediaType(answer.headers);
        if (answer.status !== 200 || !isMessageMediaType(type)) {
          throw fail(operation, "refused", `the answer is not media (HTTP ${answer.status}, ${type ?? "no content type"}); nothing was stored`, { status: answer.status });
        }
        return store(chunks, answer);
      };
      for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
        let res: Exchange;
        try {
          const headers: Record<string, string> = target.origin === credentialed ? { authorization } : {};
          res = await exchange(target.toString(), { method: "GET", headers, timeoutMs: Math.max(1, deadline - Date.now()), maxBytes, sink: mediaSink as BodySink<unknown> }, doFetch);
        } catch (err) {
          if (err instanceof TransportError && err.kind === "too_large") throw fail(operation, "too_large", `media larger than ${maxBytes} bytes`);
          // Only the sink throws anything else (its storage failing): passed on as it is.
          if (!(err instanceof TransportError) && !(err instanceof TwilioError)) throw err;
          throw transportFailure(operation, err);
        }
        if (res.status >= 300 && res.status < 400) {
          const location = res.headers.get("location");
          const next = location ? new URL(location, target) : null;
          if (!next || !allowedMediaUrl(next, true)) {
            throw fail(operation, "refused", `media redirect to ${next ? `${next.protocol}//${next.host}` : "nowhere"} refused`, { status: res.status });
          }
          target = next;
          continue;
        }
        if (res.status >= 400) throw httpFailure(operation, res);
        if (res.sunk === undefined) throw fail(operation, "refused", `the answer is not media (HTTP ${res.status})`, { status: res.status });
        return { content: res.sunk as R, mimeType: mediaType(res.headers) };
      }
      throw fail(operation, "garbage", `more than ${MAX_REDIRECTS} redirects`);
    },
  };
}

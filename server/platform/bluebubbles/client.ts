import { z } from "zod";
import { type BodySink, collectBytes, type Exchange, exchange, excerpt, issueList, mediaType, scrubber, TransportError, truncate } from "../http";
import { trimTrailingSlashes } from "../../kernel/strings";
import { type BBErrorKind, BlueBubblesError, type BlueBubblesErrorInit, redactUrl } from "./errors";
import {
  BBChatSchema,
  BBMessageSchema,
  BBServerInfoSchema,
  BBWebhookSchema,
  type BBChat,
  type BBMessage,
  type BBReaction,
  type BBServerInfo,
  type BBWebhook,
} from "./schemas";

export * from "./schemas";
export * from "./errors";

// HTTP client for BlueBubbles Server 1.9.9 (macOS iMessage bridge). Routes, envelopes and
// behaviour checked against BlueBubblesApp/bluebubbles-server master f2e2286,
// packages/server/src/server/api/http/api/v1/ (httpRoutes.ts, routers/*, responses/*,
// middleware/authMiddleware.ts). See /work/shared/PLATFORMS.md §1.
//
// - Auth is the `password` query parameter on every call (authMiddleware reads
//   guid ?? password ?? token from the query; there is no header auth). The password therefore
//   travels in every URL: error messages carry only the route path, never the URL, and every
//   string that comes from the server or the network stack is scrubbed of the password.
// - Calls go over the shared provider transport (../http.ts): one deadline covering connect,
//   headers and body, and a byte cap on every body; a JSON body over `maxJsonBytes` is
//   "garbage" and the connection is dropped.
// - This module reports what happened (kind, HTTP status, error.type, data.error, …); deciding
//   whether a failure is permanent is left to the platform layer.

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

type SendMethod = "apple-script" | "private-api";

export interface BlueBubblesClient {
  /** GET /api/v1/ping. */
  ping(): Promise<void>;
  /** GET /api/v1/server/info. */
  serverInfo(): Promise<BBServerInfo>;
  /** POST /api/v1/message/text (JSON). The response echoes tempGuid. */
  sendText(
    input: {
      chatGuid: string;
      tempGuid: string;
      message: string;
      method: SendMethod;
      selectedMessageGuid?: string;
      partIndex?: number;
      subject?: string;
      effectId?: string;
    },
    timeoutMs: number,
  ): Promise<BBMessage>;
  /** POST /api/v1/message/attachment (multipart; file part "attachment"). The response does NOT echo tempGuid. */
  sendAttachment(
    input: {
      chatGuid: string;
      tempGuid: string;
      name: string;
      mimeType: string;
      bytes: Uint8Array;
      method: SendMethod;
      isAudioMessage?: boolean;
      selectedMessageGuid?: string;
      partIndex?: number;
    },
    timeoutMs: number,
  ): Promise<BBMessage>;
  /** POST /api/v1/chat/new → the chat with `participants` and `messages` (the sent message, tempGuid injected). */
  newChat(
    input: { addresses: string[]; message?: string; tempGuid?: string; method: SendMethod; service?: "iMessage" | "SMS" },
    timeoutMs: number,
  ): Promise<BBChat>;
  /** POST /api/v1/message/react (Private API) → the reaction message. */
  react(
    input: { chatGuid: string; selectedMessageGuid: string; reaction: BBReaction; partIndex?: number },
    timeoutMs: number,
  ): Promise<BBMessage>;
  /** POST /api/v1/chat/:guid/typing (Private API). */
  startTyping(chatGuid: string): Promise<void>;
  /** DELETE /api/v1/chat/:guid/typing (Private API). On 1.9.9 master the server handler calls startTyping (bug, fixed on development). */
  stopTyping(chatGuid: string): Promise<void>;
  /** POST /api/v1/chat/:guid/read (Private API). */
  markRead(chatGuid: string): Promise<void>;
  /** POST /api/v1/message/query. An unknown chatGuid answers a plain-text 404 → BlueBubblesError kind "http", status 404. */
  queryMessages(input: {
    chatGuid?: string;
    after?: number;
    before?: number;
    limit?: number;
    offset?: number;
    sort?: "ASC" | "DESC";
    with?: string[];
  }): Promise<{ messages: BBMessage[]; total: number | null }>;
  /** GET /api/v1/message/:guid?with=chats,attachments; null on 404. */
  getMessage(guid: string): Promise<BBMessage | null>;
  /**
   * GET /api/v1/attachment/:guid/download?original=true, streamed into `sink` as it arrives
   * (the bytes in memory without one); more than maxBytes → kind "too_large" (reading stops).
   * timeoutMs (the whole download, sink included) defaults to 120 s.
   */
  downloadAttachment<R = Uint8Array>(guid: string, opts: { maxBytes: number; timeoutMs?: number; sink?: BodySink<R> }): Promise<{ content: R; mimeType: string | null }>;
  /** GET /api/v1/handle/availability/imessage?address= (Private API) → data.available. */
  iMessageAvailable(address: string): Promise<boolean>;
  /** GET /api/v1/webhook. */
  listWebhooks(): Promise<BBWebhook[]>;
  /** POST /api/v1/webhook. The server dedups by URL and returns an existing row unchanged (delete first to change events). */
  addWebhook(url: string, events: string[]): Promise<BBWebhook>;
  /** DELETE /api/v1/webhook/:id (404 "Webhook does not exist!" for an unknown id). */
  deleteWebhook(id: number): Promise<void>;
}

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_DOWNLOAD_TIMEOUT_MS = 120_000;
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

interface RequestSpec {
  method: "GET" | "POST" | "DELETE";
  path: string;
  query?: Record<string, string>;
  json?: unknown;
  form?: FormData;
  timeoutMs: number;
}

export function createBlueBubblesClient(conn: BlueBubblesConnection, opts: BlueBubblesClientOptions = {}): BlueBubblesClient {
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

  /**
   * Sends one request over the shared transport and reads its whole body under the deadline;
   * every failure becomes a BlueBubblesError. Bodies are capped at `maxJsonBytes`, but with
   * `fileCap` a 2xx body is a file capped at that ("too_large" beyond it).
   */
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

  /** Reads and classifies a JSON envelope; returns it when it is a success. */
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

  const anything = z.unknown();
  const enc = encodeURIComponent;

  function defined<T extends Record<string, unknown>>(o: T): Partial<T> {
    return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
  }

  return {
    async ping() {
      await call({ method: "GET", path: "/api/v1/ping", timeoutMs: defaultTimeout }, anything);
    },

    async serverInfo() {
      return (await call({ method: "GET", path: "/api/v1/server/info", timeoutMs: defaultTimeout }, BBServerInfoSchema)).data;
    },

    async sendText(input, timeoutMs) {
      const json = defined({
        chatGuid: input.chatGuid,
        tempGuid: input.tempGuid,
        message: input.message,
        method: input.method,
        selectedMessageGuid: input.selectedMessageGuid,
        partIndex: input.partIndex,
        subject: input.subject,
        effectId: input.effectId,
      });
      return (await call({ method: "POST", path: "/api/v1/message/text", json, timeoutMs }, BBMessageSchema)).data;
    },

    async sendAttachment(input, timeoutMs) {
      const form = new FormData();
      // Copy into a fresh ArrayBuffer-backed view (a Blob part must not be a SharedArrayBuffer view).
      const bytes = new Uint8Array(input.bytes.byteLength);
      bytes.set(input.bytes);
      form.append("attachment", new Blob([bytes], { type: input.mimeType }), input.name);
      form.append("chatGuid", input.chatGuid);
      form.append("tempGuid", input.tempGuid);
      form.append("name", input.name);
      form.append("method", input.method);
      if (input.isAudioMessage) form.append("isAudioMessage", "true");
      if (input.selectedMessageGuid !== undefined) form.append("selectedMessageGuid", input.selectedMessageGuid);
      if (input.partIndex !== undefined) form.append("partIndex", String(input.partIndex));
      return (await call({ method: "POST", path: "/api/v1/message/attachment", form, timeoutMs }, BBMessageSchema)).data;
    },

    async newChat(input, timeoutMs) {
      const json = defined({
        addresses: input.addresses,
        message: input.message,
        tempGuid: input.tempGuid,
        method: input.method,
        service: input.service,
      });
      return (await call({ method: "POST", path: "/api/v1/chat/new", json, timeoutMs }, BBChatSchema)).data;
    },

    async react(input, timeoutMs) {
      const json = defined({
        chatGuid: input.chatGuid,
        selectedMessageGuid: input.selectedMessageGuid,
        reaction: input.reaction,
        partIndex: input.partIndex,
      });
      return (await call({ method: "POST", path: "/api/v1/message/react", json, timeoutMs }, BBMessageSchema)).data;
    },

    async startTyping(chatGuid) {
      await call({ method: "POST", path: `/api/v1/chat/${enc(chatGuid)}/typing`, timeoutMs: defaultTimeout }, anything);
    },

    async stopTyping(chatGuid) {
      await call({ method: "DELETE", path: `/api/v1/chat/${enc(chatGuid)}/typing`, timeoutMs: defaultTimeout }, anything);
    },

    async markRead(chatGuid) {
      await call({ method: "POST", path: `/api/v1/chat/${enc(chatGuid)}/read`, timeoutMs: defaultTimeout }, anything);
    },

    async queryMessages(input) {
      for (const key of ["after", "before", "limit", "offset"] as const) {
        const v = input[key];
        if (v !== undefined && !Number.isFinite(v)) throw new TypeError(`queryMessages: ${key} must be a finite number`);
      }
      // after/before must be JSON numbers: the repository only converts `typeof after === "number"` to a Date.
      const json = defined({
        chatGuid: input.chatGuid,
        after: input.after,
        before: input.before,
        limit: input.limit,
        offset: input.offset,
        sort: input.sort,
        with: input.with,
      });
      const { data, envelope } = await call(
        { method: "POST", path: "/api/v1/message/query", json, timeoutMs: defaultTimeout },
        z.array(BBMessageSchema),
      );
      const meta = envelope.metadata && typeof envelope.metadata === "object" ? (envelope.metadata as Record<string, unknown>) : null;
      const total = typeof meta?.total === "number" ? meta.total : null;
      return { messages: data, total };
    },

    async getMessage(guid) {
      try {
        return (
          await call(
            { method: "GET", path: `/api/v1/message/${enc(guid)}`, query: { with: "chats,attachments" }, timeoutMs: defaultTimeout },
            BBMessageSchema,
          )
        ).data;
      } catch (err) {
        if (err instanceof BlueBubblesError && err.kind === "http" && err.status === 404) return null;
        throw err;
      }
    },

    async downloadAttachment<R = Uint8Array>(guid: string, { maxBytes, timeoutMs, sink }: { maxBytes: number; timeoutMs?: number; sink?: BodySink<R> }) {
      const spec: RequestSpec = {
        method: "GET",
        path: `/api/v1/attachment/${enc(guid)}/download`,
        query: { original: "true" },
        timeoutMs: timeoutMs ?? DEFAULT_DOWNLOAD_TIMEOUT_MS,
      };
      const res = await send(spec, maxBytes, (sink ?? collectBytes) as BodySink<unknown>);
      if (res.status < 200 || res.status >= 300) {
        // Errors come as envelopes (404 "Attachment does not exist!", 500 "… does not exist in disk!").
        readEnvelope(spec, res);
        throw failure(spec, "garbage", `HTTP ${res.status} with a success envelope`, { status: res.status });
      }
      return { content: res.sunk as R, mimeType: mediaType(res.headers) };
    },

    async iMessageAvailable(address) {
      const { data } = await call(
        { method: "GET", path: "/api/v1/handle/availability/imessage", query: { address }, timeoutMs: defaultTimeout },
        z.object({ available: z.boolean() }),
      );
      return data.available;
    },

    async listWebhooks() {
      return (await call({ method: "GET", path: "/api/v1/webhook", timeoutMs: defaultTimeout }, z.array(BBWebhookSchema))).data;
    },

    async addWebhook(url, events) {
      return (await call({ method: "POST", path: "/api/v1/webhook", json: { url, events }, timeoutMs: defaultTimeout }, BBWebhookSchema))
        .data;
    },

    async deleteWebhook(id) {
      await call({ method: "DELETE", path: `/api/v1/webhook/${enc(String(id))}`, timeoutMs: defaultTimeout }, anything);
    },
  };
}

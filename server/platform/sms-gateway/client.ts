import { z } from "zod";
import { type AnswerHeaders, type Exchange, exchange, excerpt, issueList, FORBIDDEN_PROVIDER_DESTINATION, type ProviderFailureKind, retryAfterMs, scrubber, TransportError, truncate } from "../http";
import { trimTrailingSlashes } from "../../kernel/strings";
import {
  SGHealthSchema,
  SGIncomingMessageSchema,
  SGMessageStateSchema,
  SGWebhookSchema,
  type SGHealth,
  type SGIncomingMessage,
  type SGMessageState,
  type SGWebhook,
  type SGWebhookEventName,
} from "./schemas";

export * from "./schemas";

// The same routes sit at the root of the phone's local server and under /3rdparty/v1 of the cloud or
// a private server. Errors come as `{message}` (local) or `{code, message, data}` (cloud).

export class SmsGatewayError extends Error {
  override name = "SmsGatewayError";
  readonly kind: ProviderFailureKind;
  readonly operation: string;
  readonly status: number | null;
  /** false only when the request certainly never reached the server (a connect-phase failure). */
  readonly sentRequest: boolean;
  readonly code: string | null;
  readonly detail: string | null;
  readonly retryAfterMs: number | null;

  constructor(init: {
    kind: ProviderFailureKind;
    operation: string;
    message: string;
    status?: number | null;
    sentRequest: boolean;
    code?: string | null;
    detail?: string | null;
    retryAfterMs?: number | null;
  }) {
    super(init.message);
    this.kind = init.kind;
    this.operation = init.operation;
    this.status = init.status ?? null;
    this.sentRequest = init.sentRequest;
    this.code = init.code ?? null;
    this.detail = init.detail ?? null;
    this.retryAfterMs = init.retryAfterMs ?? null;
  }
}

export interface HttpJsonOptions {
  /** A path prefix is kept, trailing slashes dropped. */
  baseUrl: string;
  headers?: Record<string, string>;
  timeoutMs: number;
  /** More is "garbage" and the connection is dropped. Default 4 MiB. */
  maxBytes?: number;
  fetch?: typeof fetch;
  /** Strings that must never appear in an error (passwords, the Authorization value). */
  secrets?: string[];
}

interface HttpJsonRequest {
  method: "GET" | "POST" | "DELETE";
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  json?: unknown;
  timeoutMs?: number;
}

interface HttpJsonResponse {
  status: number;
  headers: AnswerHeaders;
  /** Parsed JSON; null for an empty body; `{ text }` for an error body that is not JSON. */
  body: unknown;
}

export interface HttpJson {
  send(request: HttpJsonRequest): Promise<HttpJsonResponse>;
  call<S extends z.ZodType>(request: HttpJsonRequest, ok: readonly number[], schema: S): Promise<{ data: z.output<S>; response: HttpJsonResponse }>;
  failure(request: HttpJsonRequest, response: HttpJsonResponse): SmsGatewayError;
  parse<S extends z.ZodType>(request: HttpJsonRequest, response: HttpJsonResponse, schema: S): z.output<S>;
}

const DEFAULT_MAX_BYTES = 4 * 1024 * 1024;
const EXCERPT_CHARS = 200;

function errorMessage(body: unknown): string | null {
  if (!body || typeof body !== "object") return null;
  const { message, text } = body as { message?: unknown; text?: unknown };
  if (typeof message === "string" && message.trim()) return message;
  if (typeof text === "string" && text.trim()) return text;
  return null;
}

export function createHttpJson(options: HttpJsonOptions): HttpJson {
  const parsed = new URL(options.baseUrl);
  const base = parsed.origin + trimTrailingSlashes(parsed.pathname);
  const doFetch = options.fetch;
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
  const scrub = scrubber(options.secrets ?? []);
  const operationOf = (request: HttpJsonRequest) => `${request.method} ${request.path}`;
  type Extra = { status?: number | null; sentRequest?: boolean; code?: string | null; detail?: string | null; retryAfterMs?: number | null };
  const error = (request: HttpJsonRequest, kind: ProviderFailureKind, detail: string, extra: Extra = {}) =>
    new SmsGatewayError({ kind, operation: operationOf(request), message: `SMS Gateway ${operationOf(request)}: ${scrub(detail)}`, ...extra, sentRequest: extra.sentRequest ?? true });

  function url(request: HttpJsonRequest): string {
    const u = new URL(base + request.path);
    for (const [k, v] of Object.entries(request.query ?? {})) if (v !== undefined) u.searchParams.set(k, String(v));
    return u.toString();
  }

  async function send(request: HttpJsonRequest): Promise<HttpJsonResponse> {
    const headers: Record<string, string> = { accept: "application/json", ...options.headers };
    let body: string | undefined;
    if (request.json !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(request.json);
    }
    let res: Exchange;
    try {
      res = await exchange(url(request), { method: request.method, headers, body, timeoutMs: request.timeoutMs ?? options.timeoutMs, maxBytes }, doFetch);
    } catch (err) {
      if (!(err instanceof TransportError)) throw err;
      const kind = err.kind === "too_large" ? "garbage" : err.kind;
      throw error(request, kind, err.message, { code: err.code, sentRequest: err.sentRequest, status: err.status });
    }
    if (res.status >= 300 && res.status < 400) {
      throw error(request, "garbage", `unexpected redirect (HTTP ${res.status}); check the API's base URL`, { status: res.status });
    }
    const text = Buffer.from(res.body).toString("utf8");
    if (!text.trim()) return { status: res.status, headers: res.headers, body: null };
    try {
      return { status: res.status, headers: res.headers, body: JSON.parse(text) as unknown };
    } catch {
      const start = excerpt(scrub(text), EXCERPT_CHARS);
      // An error status may come with a plain-text or HTML body (a proxy's page): its text is the detail.
      if (res.status >= 400) return { status: res.status, headers: res.headers, body: { text: start } };
      throw error(request, "garbage", `answer is not JSON (HTTP ${res.status}): ${JSON.stringify(start)}`, { status: res.status });
    }
  }

  function failure(request: HttpJsonRequest, response: HttpJsonResponse): SmsGatewayError {
    const raw = errorMessage(response.body);
    const detail = raw ? excerpt(scrub(raw), EXCERPT_CHARS) : null;
    return error(request, "http", `HTTP ${response.status}${detail ? ` ${detail}` : ""}`, { status: response.status, detail, retryAfterMs: retryAfterMs(response.headers) });
  }

  function parse<S extends z.ZodType>(request: HttpJsonRequest, response: HttpJsonResponse, schema: S): z.output<S> {
    const parsedBody = schema.safeParse(response.body);
    if (parsedBody.success) return parsedBody.data as z.output<S>;
    throw error(request, "garbage", `unexpected answer (HTTP ${response.status}; ${truncate(issueList(parsedBody.error.issues), 300)})`, { status: response.status });
  }

  async function call<S extends z.ZodType>(request: HttpJsonRequest, ok: readonly number[], schema: S) {
    const response = await send(request);
    if (!ok.includes(response.status)) throw failure(request, response);
    return { data: parse(request, response, schema), response };
  }

  return { send, call, failure, parse };
}

export interface SmsGatewayConnection {
  url: string;
  username: string;
  password: string;
}

export interface SmsGatewayClientOptions {
  timeoutMs?: number;
  fetch?: typeof fetch;
}

export interface SmsGatewayClient {
  /** The gateway keeps `id`: a second message with it answers 409, so a repeated send never goes twice. */
  sendMessage(input: { id: string; text: string; phoneNumbers: string[]; withDeliveryReport: boolean }): Promise<SGMessageState>;
  getMessage(id: string): Promise<SGMessageState | null>;
  listWebhooks(): Promise<SGWebhook[]>;
  /** Replaces the webhook of a known `id`. */
  registerWebhook(input: { id: string; url: string; event: SGWebhookEventName }): Promise<SGWebhook>;
  health(): Promise<SGHealth>;
  /** null when the gateway has no inbox listing (the cloud's 501, older apps' 404). */
  inbox(input: { from: number; to: number; limit: number; offset: number }): Promise<{ messages: SGIncomingMessage[]; total: number | null } | null>;
  /** The phone posts sms:received again for what it holds in the range: for gateways without an inbox listing. */
  refreshInbox(input: { since: number; until: number }): Promise<void>;
}

const DEFAULT_TIMEOUT_MS = 20_000;

export function createSmsGatewayClient(conn: SmsGatewayConnection, opts: SmsGatewayClientOptions = {}): SmsGatewayClient {
  const basic = Buffer.from(`${conn.username}:${conn.password}`, "utf8").toString("base64");
  const http = createHttpJson({
    baseUrl: conn.url,
    headers: { authorization: `Basic ${basic}` },
    timeoutMs: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    fetch: opts.fetch,
    secrets: [conn.password, basic],
  });
  const enc = encodeURIComponent;

  return {
    async sendMessage(input) {
      const json = { id: input.id, textMessage: { text: input.text }, phoneNumbers: input.phoneNumbers, withDeliveryReport: input.withDeliveryReport };
      return (await http.call({ method: "POST", path: "/messages", json }, [202], SGMessageStateSchema)).data;
    },

    async getMessage(id) {
      const request = { method: "GET" as const, path: `/messages/${enc(id)}` };
      const response = await http.send(request);
      if (response.status === 404) return null;
      if (response.status !== 200) throw http.failure(request, response);
      return http.parse(request, response, SGMessageStateSchema);
    },

    async listWebhooks() {
      return (await http.call({ method: "GET", path: "/webhooks" }, [200], z.array(SGWebhookSchema))).data;
    },

    async registerWebhook(input) {
      return (await http.call({ method: "POST", path: "/webhooks", json: { id: input.id, url: input.url, event: input.event } }, [201], SGWebhookSchema)).data;
    },

    async health() {
      // 500 (local) and 503 (cloud) answer a failing check with the same body.
      return (await http.call({ method: "GET", path: "/health" }, [200, 500, 503], SGHealthSchema)).data;
    },

    async inbox(input) {
      const request = {
        method: "GET" as const,
        path: "/inbox",
        query: { type: "SMS", from: new Date(input.from).toISOString(), to: new Date(input.to).toISOString(), limit: input.limit, offset: input.offset },
      };
      const response = await http.send(request);
      if (response.status === 404 || response.status === 501) return null;
      if (response.status !== 200) throw http.failure(request, response);
      const messages = http.parse(request, response, z.array(SGIncomingMessageSchema));
      const header = response.headers.get("x-total-count");
      const total = header && /^\d+$/.test(header.trim()) ? Number(header) : null;
      return { messages, total };
    },

    async refreshInbox(input) {
      const json = { since: new Date(input.since).toISOString(), until: new Date(input.until).toISOString(), messageTypes: ["SMS"], triggerWebhooks: true };
      const request = { method: "POST" as const, path: "/inbox/refresh", json };
      const response = await http.send(request);
      if (response.status !== 202) throw http.failure(request, response);
    },
  };
}

export function describeSmsGatewayError(err: unknown): string {
  if (err instanceof SmsGatewayError) {
    switch (err.kind) {
      case "timeout":
        return "SMS Gateway did not answer in time";
      case "network":
        if (err.code === "EFORBIDDENADDRESS") return `SMS Gateway's address refused: ${FORBIDDEN_PROVIDER_DESTINATION}`;
        return err.sentRequest
          ? `the connection to SMS Gateway dropped mid-request${err.code ? ` (${err.code})` : ""}`
          : `could not reach SMS Gateway${err.code ? ` (${err.code})` : ""}`;
      case "garbage":
        return `unexpected answer from SMS Gateway${err.status !== null ? ` (HTTP ${err.status})` : ""}`;
      case "http":
        if (err.status === 401 || err.status === 403) return "SMS Gateway refused the username or password (connect the line again with the ones shown in the app)";
        if (err.status === 404) return "no SMS Gateway API at this URL (the phone's local server is http://<phone>:8080; the cloud's is https://api.sms-gate.app/3rdparty/v1)";
        return `SMS Gateway answered HTTP ${err.status}${err.detail ? `: ${err.detail}` : ""}`;
    }
  }
  return err instanceof Error ? err.message.slice(0, 300) : String(err).slice(0, 300);
}

import { ConnectionError, errorFromResponse, RelayError, TimeoutError } from "./errors.js";
import { buildUrl, parseRetryAfter, sleep } from "./http.js";
import { listenEvents, type ListenTransport } from "./listen.js";
import type { ListenOptions, Page, RelayOptions, RequestOptions } from "./options.js";
import type { WebhookEvent } from "./webhooks.js";
import {
  OPERATIONS,
  type AcceptedWrite,
  type BatchResult,
  type Capacity,
  type Chat,
  type CreateWebhookBody,
  type Deleted,
  type File as FileObject,
  type GetOutboxQuery,
  type Line,
  type ListChatsQuery,
  type ListDeliveriesQuery,
  type ListenQuery,
  type ListLinesQuery,
  type ListMessagesQuery,
  type ListReactionsQuery,
  type ListReceiptsQuery,
  type ListTypingQuery,
  type ListWebhooksQuery,
  type Message,
  type OperationId,
  type Operations,
  type OutboxItem,
  type Pool,
  type Reaction,
  type ReadReceipt,
  type Resend,
  type ResendDeliveriesBody,
  type RescheduleOutboxItemBody,
  type Sandbox,
  type SendAudioMessageBody,
  type SendMessageBody,
  type SendReactionBody,
  type SendReceiptBody,
  type SendTypingBody,
  type TypingIndicator,
  type Webhook,
  type WebhookDelivery,
} from "./generated.js";

export { buildUrl, parseRetryAfter };

/** An operation's input: its query and/or body, as declared. */
export type OperationInput<Id extends OperationId> = (Operations[Id] extends { query: infer Q } ? ({} extends Q ? { query?: Q } : { query: Q }) : unknown) &
  (Operations[Id] extends { body: infer B } ? { body: B } : unknown);
/** An operation's success body (null for a redirect or a stream). */
export type OperationResult<Id extends OperationId> = Operations[Id] extends { response: infer R } ? R : null;

interface Call {
  query?: Record<string, unknown>;
  body?: unknown;
  raw?: { data: Blob | Uint8Array | ArrayBuffer; contentType: string; filename?: string };
}

const DEFAULT_BASE_URL = "http://localhost:3000";
export class Relay {
  readonly baseUrl: string;
  private readonly apiKey: string;
  private readonly timeoutMs: number;
  private readonly maxRetries: number;
  private readonly retryDelayMs: number;
  private readonly maxRetryAfterMs: number;
  private readonly fetchImpl: typeof fetch;
  private readonly extraHeaders: Record<string, string>;

  constructor(options: RelayOptions) {
    if (!options.apiKey) throw new TypeError("Relay: apiKey is required");
    this.apiKey = options.apiKey;
    this.baseUrl = options.baseUrl ?? DEFAULT_BASE_URL;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.maxRetries = options.maxRetries ?? 2;
    this.retryDelayMs = options.retryDelayMs ?? 500;
    this.maxRetryAfterMs = options.maxRetryAfterMs ?? 60_000;
    this.fetchImpl = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.extraHeaders = options.headers ?? {};
  }

  /** One call with its retries (README, "Retries and idempotency"), one Idempotency-Key for all of a POST's. */
  async request<T>(id: OperationId, call: Call = {}, options: RequestOptions = {}): Promise<{ body: T; response: Response }> {
    const op = OPERATIONS[id];
    const url = buildUrl(this.baseUrl, op.path, call.query);
    const headers: Record<string, string> = { ...this.extraHeaders, authorization: `Bearer ${this.apiKey}`, accept: "application/json" };
    if (op.method === "POST") headers["idempotency-key"] = options.idempotencyKey ?? crypto.randomUUID();
    let body: BodyInit | undefined;
    if (call.raw) {
      headers["content-type"] = call.raw.contentType;
      if (call.raw.filename !== undefined) headers["x-filename"] = encodeURIComponent(call.raw.filename);
      body = call.raw.data as BodyInit;
    } else if (call.body !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(call.body);
    }
    const maxRetries = options.maxRetries ?? this.maxRetries;
    const timeoutMs = options.timeoutMs ?? this.timeoutMs;

    for (let attempt = 0; ; attempt++) {
      const retriesLeft = attempt < maxRetries;
      let response: Response;
      try {
        response = await this.attempt(url, { method: op.method, headers, body, redirect: "manual" }, timeoutMs, options.signal);
      } catch (error) {
        if (options.signal?.aborted) throw options.signal.reason;
        if (retriesLeft) {
          await sleep(this.backoff(attempt), options.signal);
          continue;
        }
        throw error;
      }
      if (response.ok || (op.redirect && response.status >= 300 && response.status < 400)) {
        if (op.redirect || op.stream) return { body: null as T, response };
        const text = await response.text();
        return { body: (text ? JSON.parse(text) : null) as T, response };
      }
      const retryAfterMs = parseRetryAfter(response.headers.get("retry-after"));
      const text = await response.text();
      let parsed: unknown = null;
      try {
        parsed = text ? JSON.parse(text) : null;
      } catch {} // not JSON (a proxy's error page): typed by status alone
      const error = errorFromResponse(response.status, parsed, response.headers, retryAfterMs);
      const retryable = response.status === 429 || response.status >= 500 || error.code === "idempotency_key_in_use";
      const waitable = retryAfterMs === undefined || retryAfterMs <= this.maxRetryAfterMs;
      if (retryable && retriesLeft && waitable) {
        await sleep(retryAfterMs ?? this.backoff(attempt), options.signal);
        continue;
      }
      throw error;
    }
  }

  private async attempt(url: string, init: RequestInit, timeoutMs: number, signal?: AbortSignal): Promise<Response> {
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, timeoutMs);
    const onAbort = () => controller.abort(signal!.reason);
    if (signal?.aborted) onAbort();
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      return await this.fetchImpl(url, { ...init, signal: controller.signal });
    } catch (cause) {
      if (timedOut) throw new TimeoutError({ type: "connection_error", code: "timeout", message: `No answer within ${timeoutMs} ms`, cause });
      if (signal?.aborted) throw cause;
      // fetch's TypeError says only "fetch failed"; the reason (ECONNREFUSED, ENOTFOUND...) is its cause.
      const reason = (cause as { cause?: { code?: string; message?: string } })?.cause;
      const detail = reason?.code ?? reason?.message ?? (cause as Error)?.message ?? String(cause);
      throw new ConnectionError({ type: "connection_error", code: "connection_error", message: `Could not reach ${new URL(url).origin} (${detail})`, cause });
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    }
  }

  private backoff(attempt: number): number {
    return Math.min(8_000, this.retryDelayMs * 2 ** attempt) * (0.5 + Math.random() / 2);
  }

  /** Any operation by its ID, typed from its declaration: `relay.call("listChats", { query: { from } })`. */
  call<Id extends OperationId>(id: Id, input: OperationInput<Id>, options?: RequestOptions): Promise<OperationResult<Id>> {
    return this.fetchBody<OperationResult<Id>>(id, input as Call, options);
  }

  private async fetchBody<T>(id: OperationId, call?: Call, options?: RequestOptions): Promise<T> {
    return (await this.request<T>(id, call, options)).body;
  }

  private async *paginate<T>(id: OperationId, query: Record<string, unknown>, options?: RequestOptions): AsyncGenerator<T, void, undefined> {
    let cursor = query.cursor as string | undefined;
    for (;;) {
      const page = await this.fetchBody<Page<T>>(id, { query: { ...query, cursor } }, options);
      yield* page.data;
      if (!page.has_more || !page.next_cursor) return;
      cursor = page.next_cursor;
    }
  }

  private lister<Q extends object, T>(id: OperationId) {
    return {
      list: (query: Q, options?: RequestOptions) => this.fetchBody<Page<T>>(id, { query: query as Record<string, unknown> }, options),
      iterate: (query: Q, options?: RequestOptions) => this.paginate<T>(id, query as Record<string, unknown>, options),
    };
  }

  readonly lines = {
    list: (query: ListLinesQuery = {}, options?: RequestOptions) => this.lister<ListLinesQuery, Line>("listLines").list(query, options),
    iterate: (query: ListLinesQuery = {}, options?: RequestOptions) => this.lister<ListLinesQuery, Line>("listLines").iterate(query, options),
  };

  readonly chats = {
    ...this.lister<ListChatsQuery, Chat>("listChats"),
    /** Human takeover (extension, `outbox:approve` scope): keys with guardrails get 409 `chat_paused` here. */
    pause: (id: string, options?: RequestOptions) => this.fetchBody<Chat>("pauseChat", { query: { id } }, options),
    resume: (id: string, options?: RequestOptions) => this.fetchBody<Chat>("resumeChat", { query: { id } }, options),
  };

  readonly messages = {
    ...this.lister<Omit<ListMessagesQuery, "id">, Message>("listMessages"),
    /** One message by msg_ ID or platform GUID. */
    get: (id: string, options?: RequestOptions) => this.fetchBody<Message>("listMessages", { query: { id } }, options),
    /** Answers the `pending` outbox item; `from` may be a pool_ ID, and `send_at` schedules the send. */
    send: (body: SendMessageBody, options?: RequestOptions) => this.fetchBody<AcceptedWrite>("sendMessage", { body }, options),
    /**
     * Up to 1,000 sends in one request (extension), each checked on its own: `data` answers in order, each the
     * accepted item or the error envelope `send` would have answered for it. Its retries reuse one Idempotency-Key.
     */
    sendBatch: (messages: SendMessageBody[], options?: RequestOptions) =>
      this.fetchBody<BatchResult>("sendMessages", { body: { messages } }, options),
  };

  readonly audioMessages = {
    /** Sends an uploaded audio file as a voice memo; `send_at` schedules it as for messages.send. */
    send: (body: SendAudioMessageBody, options?: RequestOptions) => this.fetchBody<AcceptedWrite>("sendAudioMessage", { body }, options),
  };

  readonly reactions = {
    ...this.lister<ListReactionsQuery, Reaction>("listReactions"),
    send: (body: SendReactionBody, options?: RequestOptions) => this.fetchBody<AcceptedWrite>("sendReaction", { body }, options),
  };

  readonly typing = {
    ...this.lister<ListTypingQuery, TypingIndicator>("listTyping"),
    send: (body: SendTypingBody, options?: RequestOptions) => this.fetchBody<AcceptedWrite>("sendTyping", { body }, options),
  };

  readonly receipts = {
    ...this.lister<ListReceiptsQuery, ReadReceipt>("listReceipts"),
    send: (body: SendReceiptBody, options?: RequestOptions) => this.fetchBody<AcceptedWrite>("sendReceipt", { body }, options),
  };

  readonly outbox = {
    list: (query: Omit<GetOutboxQuery, "id"> = {}, options?: RequestOptions) => this.lister<Omit<GetOutboxQuery, "id">, OutboxItem>("getOutbox").list(query, options),
    iterate: (query: Omit<GetOutboxQuery, "id"> = {}, options?: RequestOptions) =>
      this.lister<Omit<GetOutboxQuery, "id">, OutboxItem>("getOutbox").iterate(query, options),
    get: (id: string, options?: RequestOptions) => this.fetchBody<OutboxItem>("getOutbox", { query: { id } }, options),
    /** Polls until `sent` or `failed` (returned either way); a TimeoutError after `timeoutMs` (default 60 s). */
    wait: async (
      id: string,
      { timeoutMs = 60_000, intervalMs = 500, signal, onPoll }: { timeoutMs?: number; intervalMs?: number; signal?: AbortSignal; onPoll?: (item: OutboxItem) => void } = {},
    ) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const item = await this.fetchBody<OutboxItem>("getOutbox", { query: { id } }, { signal });
        onPoll?.(item);
        if (item.status === "sent" || item.status === "failed") return item;
        const left = deadline - Date.now();
        if (left <= 0) throw new TimeoutError({ type: "connection_error", code: "timeout", message: `Outbox item ${id} still ${item.status} after ${timeoutMs} ms` });
        await sleep(Math.min(intervalMs, left), signal);
      }
    },
    /** Calls off a pending item (extension): `failed`, `error: "canceled"`; one canceled already resolves as it is. */
    cancel: async (id: string, options?: RequestOptions) => {
      try {
        return await this.fetchBody<OutboxItem>("cancelOutboxItem", { query: { id } }, options);
      } catch (error) {
        if (!(error instanceof RelayError) || error.code !== "outbox_item_not_cancelable") throw error;
        const item = await this.fetchBody<OutboxItem>("getOutbox", { query: { id } }, options).catch((lookup: unknown) => {
          if (options?.signal?.aborted) throw lookup;
          return null; // (a key without outbox:read) the refusal stands
        });
        if (typeof item?.canceled_at !== "number") throw error;
        return item;
      }
    },
    /** Moves a pending item's send to `sendAt` (extension; Unix ms, at most 365 days ahead). */
    reschedule: (id: string, sendAt: number, options?: RequestOptions) =>
      this.fetchBody<OutboxItem>("rescheduleOutboxItem", { query: { id }, body: { send_at: sendAt } satisfies RescheduleOutboxItemBody }, options),
    /** Lets a send held for approval go, now or at its `send_at` (extension, `outbox:approve` scope). */
    approve: (id: string, options?: RequestOptions) => this.fetchBody<OutboxItem>("approveOutboxItem", { query: { id } }, options),
    /** Declines a send held for approval: it ends `failed` with `error: "rejected"` (extension). */
    reject: (id: string, options?: RequestOptions) => this.fetchBody<OutboxItem>("rejectOutboxItem", { query: { id } }, options),
  };

  readonly capacity = {
    /** What a line, or each line of a pool_ ID, can still send to new contacts, and what waits (extension). */
    get: (from: string, options?: RequestOptions) => this.fetchBody<Capacity>("getCapacity", { query: { from } }, options),
  };

  readonly pools = {
    list: (options?: RequestOptions) => this.fetchBody<Page<Pool>>("listPools", {}, options),
  };

  readonly files = {
    upload: (data: Blob | Uint8Array | ArrayBuffer, { filename, contentType }: { filename?: string; contentType?: string } = {}, options?: RequestOptions) =>
      this.fetchBody<FileObject>(
        "uploadFile",
        { raw: { data, filename, contentType: contentType ?? ((data instanceof Blob && data.type) || "application/octet-stream") } },
        options,
      ),
    /** The signed download URL (valid one hour) the API redirects to. */
    downloadUrl: async (id: string, options?: RequestOptions) => {
      const { response } = await this.request("downloadFile", { query: { id } }, options);
      const location = response.headers.get("location");
      if (!location) {
        throw new RelayError({ type: "api_error", code: "missing_location", message: "The download answer had no Location (browsers hide it: use the file's url instead)", status: response.status });
      }
      return new URL(location, this.baseUrl).toString();
    },
  };

  /** The key's webhook events as they happen, reopened with its session when dropped; deduplicate on `delivery_id`. */
  listen(query: ListenQuery = {}, options: ListenOptions = {}): AsyncGenerator<WebhookEvent, void, undefined> {
    return listenEvents(this.retryPolicy(), query, options);
  }

  private retryPolicy(): ListenTransport {
    return {
      open: (query, options) => this.request("listen", { query }, options),
      retryDelayMs: this.retryDelayMs,
      maxRetryAfterMs: this.maxRetryAfterMs,
    };
  }

  readonly sandbox = {
    get: (options?: RequestOptions) => this.fetchBody<Sandbox>("getSandbox", {}, options),
    activate: (options?: RequestOptions) => this.fetchBody<Sandbox>("activateSandbox", {}, options),
  };

  readonly webhooks = {
    list: (query: ListWebhooksQuery = {}, options?: RequestOptions) => this.lister<ListWebhooksQuery, Webhook>("listWebhooks").list(query, options),
    iterate: (query: ListWebhooksQuery = {}, options?: RequestOptions) => this.lister<ListWebhooksQuery, Webhook>("listWebhooks").iterate(query, options),
    /** The response carries the signing secret, only here (and from rotateSecret). */
    create: (body: CreateWebhookBody, options?: RequestOptions) => this.fetchBody<Webhook>("createWebhook", { body }, options),
    delete: (id: string, options?: RequestOptions) => this.fetchBody<Deleted>("deleteWebhook", { body: { id } }, options),
    deliveries: (query: Omit<ListDeliveriesQuery, "id"> & { webhook_id: string }, options?: RequestOptions) =>
      this.fetchBody<Page<WebhookDelivery>>("listDeliveries", { query }, options),
    iterateDeliveries: (query: Omit<ListDeliveriesQuery, "id"> & { webhook_id: string }, options?: RequestOptions) =>
      this.paginate<WebhookDelivery>("listDeliveries", query, options),
    delivery: (id: string, options?: RequestOptions) => this.fetchBody<WebhookDelivery>("listDeliveries", { query: { id } }, options),
    resend: (body: ResendDeliveriesBody, options?: RequestOptions) => this.fetchBody<Resend>("resendDeliveries", { body }, options),
    rotateSecret: (id: string, options?: RequestOptions) => this.fetchBody<Webhook>("rotateWebhookSecret", { body: { id } }, options),
    enable: (id: string, options?: RequestOptions) => this.fetchBody<Webhook>("enableWebhook", { body: { id } }, options),
    disable: (id: string, options?: RequestOptions) => this.fetchBody<Webhook>("disableWebhook", { body: { id } }, options),
  };
}

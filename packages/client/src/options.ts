// The client's options and the shapes its methods share.

export interface RelayOptions {
  /** sk_live_... */
  apiKey: string;
  /** Default http://localhost:3000 (a self-hosted server). */
  baseUrl?: string;
  /** Per attempt; default 30 s. */
  timeoutMs?: number;
  /** Retries after the first attempt on network errors, timeouts, 429 and 5xx; default 2. */
  maxRetries?: number;
  /** First backoff delay, doubled per retry, with jitter; default 500 ms. */
  retryDelayMs?: number;
  /** A Retry-After longer than this is not waited for: the error is thrown; default 60 s. */
  maxRetryAfterMs?: number;
  /** A fetch implementation; default globalThis.fetch. */
  fetch?: typeof fetch;
  /** Sent with every request. */
  headers?: Record<string, string>;
}

export interface RequestOptions {
  /** POST only: the key to send (default: a random UUID per call, reused by its retries). */
  idempotencyKey?: string;
  timeoutMs?: number;
  maxRetries?: number;
  signal?: AbortSignal;
}

/** The first event of GET /v1/listen. */
export interface ListenSession {
  /** lsn_ ID: pass as `session` to resume. */
  session: string;
  /** The lines listened to (handles). */
  lines: string[];
  events: string[];
}

export interface ListenOptions extends Omit<RequestOptions, "idempotencyKey"> {
  /** Called each time the stream opens: the first time, after each reconnection (same session), and with a new session when a resume came too late. */
  onSession?: (session: ListenSession) => void;
  /** The server sends a keep-alive every 15 s; a connection silent this long is reopened (default 45 s). */
  idleTimeoutMs?: number;
  /** Called before each reconnection: the attempt number, the wait, and what ended the stream (undefined: the server closed it). */
  onReconnect?: (info: { attempt: number; delayMs: number; error: unknown }) => void;
  /** Default true: reopen a dropped stream. */
  reconnect?: boolean;
}

/** One page of a list, as the API answers it. */
export interface Page<T> {
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}

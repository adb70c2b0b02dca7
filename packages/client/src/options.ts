export interface RelayOptions {
  apiKey: string;
  baseUrl?: string;
  /** Per attempt; default 30 s. */
  timeoutMs?: number;
  /** Retries after the first attempt on network errors, timeouts, 429 and 5xx; default 2. */
  maxRetries?: number;
  /** First backoff delay, doubled per retry, with jitter; default 500 ms. */
  retryDelayMs?: number;
  /** A Retry-After longer than this is not waited for: the error is thrown; default 60 s. */
  maxRetryAfterMs?: number;
  fetch?: typeof fetch;
  headers?: Record<string, string>;
}

export interface RequestOptions {
  /** POST only: the key to send (default: a random UUID per call, reused by its retries). */
  idempotencyKey?: string;
  timeoutMs?: number;
  maxRetries?: number;
  signal?: AbortSignal;
}

export interface ListenSession {
  /** lsn_ ID: pass as `session` to resume. */
  session: string;
  lines: string[];
  events: string[];
}

export interface ListenOptions extends Omit<RequestOptions, "idempotencyKey"> {
  onSession?: (session: ListenSession) => void;
  /** The server sends a keep-alive every 15 s; a connection silent this long is reopened (default 45 s). */
  idleTimeoutMs?: number;
  /** Called before each reconnection: the attempt number, the wait, and what ended the stream (undefined: the server closed it). */
  onReconnect?: (info: { attempt: number; delayMs: number; error: unknown }) => void;
  reconnect?: boolean;
}

export interface Page<T> {
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}

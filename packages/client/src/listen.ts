import { ConnectionError, errorFromStreamEvent, RelayError } from "./errors.js";
import type { ListenQuery } from "./generated.js";
import { sleep } from "./http.js";
import type { ListenOptions, ListenSession, RequestOptions } from "./options.js";
import { readServerSentEvents, type ServerSentEvent } from "./sse.js";
import type { WebhookEvent } from "./webhooks.js";

export interface ListenTransport {
  open(query: Record<string, unknown>, options: RequestOptions): Promise<{ response: Response }>;
  retryDelayMs: number;
  maxRetryAfterMs: number;
}

export async function* listenEvents(transport: ListenTransport, query: ListenQuery, options: ListenOptions): AsyncGenerator<WebhookEvent, void, undefined> {
  const { signal, idleTimeoutMs = 45_000 } = options;
  let session = query.session;
  let opened = false;
  for (let failures = 0; ; ) {
    let error: unknown;
    const connectedAt = Date.now();
    let messages: AsyncGenerator<ServerSentEvent, void, undefined> | undefined;
    try {
      try {
        const { response } = await transport.open({ ...query, session } as Record<string, unknown>, { ...options, maxRetries: opened ? 0 : undefined });
        messages = readServerSentEvents(response.body!, { signal, idleTimeoutMs });
      } catch (err) {
        if (signal?.aborted) return;
        const expired = opened && err instanceof RelayError && err.param === "session";
        const transient = err instanceof ConnectionError || (err instanceof RelayError && ((err.status ?? 0) >= 500 || err.status === 429));
        // Never connected: a wrong base URL or key is the caller's to see, not to retry forever.
        if (!opened || options.reconnect === false || !(expired || transient)) throw err;
        if (expired) session = undefined;
        error = err;
      }
      while (messages) {
        let next: IteratorResult<ServerSentEvent, void>;
        try {
          next = await messages.next();
        } catch (err) {
          if (signal?.aborted) return;
          error = err; // the connection dropped or went silent: reopen it
          break;
        }
        if (next.done) break;
        // Errors from here on are not the network's (an `error` event: the key was revoked; a throwing
        // onSession; unreadable data): reconnecting would not help, so they end the iteration.
        if (next.value.event === "error") throw errorFromStreamEvent(next.value.data);
        if (next.value.event === "session") {
          const info = JSON.parse(next.value.data) as ListenSession;
          session = info.session;
          opened = true;
          options.onSession?.(info);
        } else {
          failures = 0;
          yield JSON.parse(next.value.data) as WebhookEvent;
        }
      }
    } finally {
      await messages?.return();
    }
    if (signal?.aborted || options.reconnect === false) return;
    // A stream that carried events or stayed up a while was healthy: start backing off anew.
    failures = Date.now() - connectedAt > 30_000 ? 1 : failures + 1;
    const retryAfterMs = error instanceof RelayError ? (error.retryAfterMs ?? 0) : 0;
    const delayMs = Math.max(Math.min(10_000, transport.retryDelayMs * 2 ** (failures - 1)), Math.min(retryAfterMs, transport.maxRetryAfterMs));
    options.onReconnect?.({ attempt: failures, delayMs, error });
    try {
      await sleep(delayMs, signal);
    } catch {
      return; // aborted while waiting
    }
  }
}

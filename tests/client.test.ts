import { describe, expect, it } from "vitest";
import {
  ApiError,
  AuthenticationError,
  ConnectionError,
  InvalidRequestError,
  NotFoundError,
  RateLimitError,
  Relay,
  TimeoutError,
  buildUrl,
  parseRetryAfter,
  type Chat,
} from "@/packages/client/src/index";

// The client library against a scripted fetch: retries, idempotency keys, typed errors,
// pagination and URL building, without a server.

interface Seen {
  method: string;
  url: string;
  headers: Headers;
  body: string | null;
}

type Answer = Response | Error | ((init: RequestInit) => Promise<Response>);

/** A fetch answering from a script, in order, recording every request. */
function scripted(...answers: Answer[]) {
  const seen: Seen[] = [];
  const fetch = async (input: RequestInfo | URL, init: RequestInit = {}) => {
    seen.push({
      method: init.method ?? "GET",
      url: String(input),
      headers: new Headers(init.headers),
      body: typeof init.body === "string" ? init.body : null,
    });
    const next = answers.shift();
    if (!next) throw new Error("no scripted answer left");
    if (next instanceof Error) throw next;
    if (typeof next === "function") return next(init);
    return next;
  };
  return { fetch: fetch as typeof globalThis.fetch, seen };
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } });
const apiError = (status: number, type: string, code: string, extra: Record<string, string> = {}, headers: Record<string, string> = {}) =>
  json(status, { error: { type, code, message: `${code}!`, ...extra }, request_id: "req_test1" }, headers);
const accepted = () => json(200, { object: "outbox_item", id: "obx_1", status: "pending" });
const send = { from: "+15550001000", to: "+15551230001", text: "hi" };

function client(fetch: typeof globalThis.fetch, extra: Partial<ConstructorParameters<typeof Relay>[0]> = {}) {
  return new Relay({ apiKey: "sk_live_test", baseUrl: "https://relay.test", fetch, retryDelayMs: 1, ...extra });
}

describe("client retries", () => {
  it("waits Retry-After on 429 and retries with the same Idempotency-Key: one logical send", async () => {
    const { fetch, seen } = scripted(apiError(429, "rate_limit_error", "rate_limit_exceeded", {}, { "retry-after": "1" }), accepted());
    const started = Date.now();
    const result = await client(fetch).messages.send(send);
    expect(result).toEqual({ object: "outbox_item", id: "obx_1", status: "pending" });
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(seen).toHaveLength(2);
    const keys = seen.map((s) => s.headers.get("idempotency-key"));
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[1]).toBe(keys[0]);
    expect(seen[1]!.body).toBe(seen[0]!.body);
    expect(seen[0]!.headers.get("authorization")).toBe("Bearer sk_live_test");
    expect(seen[0]!.headers.get("content-type")).toBe("application/json");
  });

  it("uses a new key per logical call, or the caller's own", async () => {
    const { fetch, seen } = scripted(accepted(), accepted(), accepted());
    const relay = client(fetch);
    await relay.messages.send(send);
    await relay.messages.send(send);
    await relay.messages.send(send, { idempotencyKey: "order-42" });
    const keys = seen.map((s) => s.headers.get("idempotency-key"));
    expect(keys[0]).not.toBe(keys[1]);
    expect(keys[2]).toBe("order-42");
  });

  it("retries 500 twice then succeeds; GETs carry no Idempotency-Key", async () => {
    const { fetch, seen } = scripted(
      apiError(500, "api_error", "internal_error"),
      apiError(503, "api_error", "audio_conversion_unavailable"),
      json(200, { data: [], has_more: false, next_cursor: null }),
    );
    const page = await client(fetch).lines.list();
    expect(page.data).toEqual([]);
    expect(seen).toHaveLength(3);
    expect(seen.every((s) => s.headers.get("idempotency-key") === null)).toBe(true);
  });

  it("gives up after maxRetries with the last typed error", async () => {
    const { fetch, seen } = scripted(...[1, 2, 3].map(() => apiError(500, "api_error", "internal_error")));
    const error = await client(fetch, { maxRetries: 1 }).lines.list().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(seen).toHaveLength(2);
  });

  it("does not retry other 4xx", async () => {
    const { fetch, seen } = scripted(apiError(400, "invalid_request_error", "invalid_parameter_value", { param: "to" }));
    const error = (await client(fetch).messages.send(send).catch((e: unknown) => e)) as InvalidRequestError;
    expect(error).toBeInstanceOf(InvalidRequestError);
    expect(error).toMatchObject({ code: "invalid_parameter_value", param: "to", status: 400, requestId: "req_test1", type: "invalid_request_error" });
    expect(seen).toHaveLength(1);
  });

  it("retries 409 idempotency_key_in_use (an earlier attempt still running) with the same key", async () => {
    const { fetch, seen } = scripted(apiError(409, "invalid_request_error", "idempotency_key_in_use"), accepted());
    await client(fetch).messages.send(send);
    expect(seen).toHaveLength(2);
    expect(seen[1]!.headers.get("idempotency-key")).toBe(seen[0]!.headers.get("idempotency-key"));
  });

  it("does not wait a Retry-After longer than maxRetryAfterMs: throws RateLimitError with retryAfterMs", async () => {
    const { fetch, seen } = scripted(apiError(429, "rate_limit_error", "rate_limit_exceeded", {}, { "retry-after": "3600" }));
    const error = (await client(fetch).lines.list().catch((e: unknown) => e)) as RateLimitError;
    expect(error).toBeInstanceOf(RateLimitError);
    expect(error.retryAfterMs).toBe(3_600_000);
    expect(seen).toHaveLength(1);
  });

  it("times out each attempt (TimeoutError) and retries it", async () => {
    const hang = (init: RequestInit) =>
      new Promise<Response>((_, reject) => init.signal!.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError"))));
    const { fetch, seen } = scripted(hang, hang);
    const error = await client(fetch, { timeoutMs: 30, maxRetries: 1 }).messages.send(send).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error).toBeInstanceOf(ConnectionError);
    expect((error as TimeoutError).code).toBe("timeout");
    expect(seen).toHaveLength(2);
    expect(seen[1]!.headers.get("idempotency-key")).toBe(seen[0]!.headers.get("idempotency-key"));
  });

  it("retries network errors, then throws ConnectionError", async () => {
    const { fetch, seen } = scripted(new TypeError("fetch failed"), accepted());
    await expect(client(fetch).messages.send(send)).resolves.toMatchObject({ id: "obx_1" });
    const failing = scripted(new TypeError("fetch failed"));
    const error = await client(failing.fetch, { maxRetries: 0 }).messages.send(send).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectionError);
    expect(error).not.toBeInstanceOf(TimeoutError);
    expect(seen).toHaveLength(2);
  });

  it("stops when the caller's signal aborts, without retrying", async () => {
    const hang = (init: RequestInit) => new Promise<Response>((_, reject) => init.signal!.addEventListener("abort", () => reject(init.signal!.reason)));
    const { fetch, seen } = scripted(hang, hang);
    const controller = new AbortController();
    const pending = client(fetch).lines.list({}, { signal: controller.signal }).catch((e: unknown) => e);
    controller.abort(new Error("user cancelled"));
    expect(((await pending) as Error).message).toBe("user cancelled");
    expect(seen).toHaveLength(1);
  });
});

describe("client errors", () => {
  it.each([
    [401, "authentication_error", "invalid_api_key", AuthenticationError],
    [404, "not_found_error", "chat_not_found", NotFoundError],
    [403, "invalid_request_error", "contact_has_not_messaged", InvalidRequestError],
  ] as const)("%i %s → %s", async (status, type, code, Class) => {
    const { fetch } = scripted(apiError(status, type, code));
    const error = await client(fetch).messages.send(send).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Class);
    expect(error).toMatchObject({ status, type, code, requestId: "req_test1", message: `${code}!` });
  });

  it("types a non-JSON error by its status, with the Request-Id header", async () => {
    const { fetch } = scripted(new Response("<html>bad gateway</html>", { status: 404, headers: { "request-id": "req_hdr" } }));
    const error = await client(fetch).lines.list().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotFoundError);
    expect(error).toMatchObject({ code: "http_404", requestId: "req_hdr" });
  });
});

describe("client pagination and URLs", () => {
  it("iterates every item across pages, following next_cursor", async () => {
    const chat = (id: string) => ({ object: "chat", id }) as Chat;
    const { fetch, seen } = scripted(
      json(200, { data: [chat("c1"), chat("c2")], has_more: true, next_cursor: "cur1" }),
      json(200, { data: [chat("c3")], has_more: true, next_cursor: "cur2" }),
      json(200, { data: [chat("c4")], has_more: false, next_cursor: null }),
    );
    const ids: string[] = [];
    for await (const c of client(fetch).chats.iterate({ from: "+15550001000", limit: 2 })) ids.push(c.id);
    expect(ids).toEqual(["c1", "c2", "c3", "c4"]);
    expect(seen.map((s) => new URL(s.url).search)).toEqual([
      "?from=%2B15550001000&limit=2",
      "?from=%2B15550001000&limit=2&cursor=cur1",
      "?from=%2B15550001000&limit=2&cursor=cur2",
    ]);
  });

  it("builds URLs from the base URL, path and defined query values", () => {
    expect(buildUrl("https://relay.test/", "/v1/messages", { from: "+1 555", to: undefined, limit: 5, cursor: null })).toBe(
      "https://relay.test/v1/messages?from=%2B1+555&limit=5",
    );
    expect(buildUrl("https://host.test/relay", "/v1/lines")).toBe("https://host.test/relay/v1/lines");
  });

  it("parses Retry-After as seconds or an HTTP date", () => {
    expect(parseRetryAfter("2")).toBe(2000);
    expect(parseRetryAfter(null)).toBeUndefined();
    expect(parseRetryAfter(new Date(10_000).toUTCString(), 4_000)).toBe(6_000);
    expect(parseRetryAfter("soon")).toBeUndefined();
  });

  it("sends each operation with its method, path and body", async () => {
    const { fetch, seen } = scripted(
      json(200, { id: "wh_1", deleted: true }),
      json(200, { object: "webhook", id: "wh_1" }),
      json(201, { object: "file", id: "file_1" }),
      new Response(null, { status: 302, headers: { location: "/api/files/file_1?sig=abc" } }),
      json(200, { object: "message", id: "msg_1" }),
    );
    const relay = client(fetch);
    await relay.webhooks.delete("wh_1");
    await relay.webhooks.rotateSecret("wh_1");
    await relay.files.upload(new Uint8Array([1, 2, 3]), { filename: "a photo.png", contentType: "image/png" });
    expect(await relay.files.downloadUrl("file_1")).toBe("https://relay.test/api/files/file_1?sig=abc");
    await relay.messages.get("msg_1");
    expect(seen.map((s) => `${s.method} ${new URL(s.url).pathname}${new URL(s.url).search}`)).toEqual([
      "DELETE /v1/webhooks",
      "POST /v1/webhooks/rotate-secret",
      "POST /v1/files",
      "GET /v1/files?id=file_1",
      "GET /v1/messages?id=msg_1",
    ]);
    expect(seen[0]!.body).toBe('{"id":"wh_1"}');
    expect(seen[0]!.headers.get("idempotency-key")).toBeNull();
    expect(seen[2]!.headers.get("content-type")).toBe("image/png");
    expect(seen[2]!.headers.get("x-filename")).toBe("a%20photo.png");
  });
});

describe("client listen", () => {
  it("reads server-sent events: the session to onSession, each event typed, comments and retry lines skipped", async () => {
    const chunks = [
      "retry: 2000\nevent: session\ndata: {\"session\":\"lsn_1\",\"lines\":[\"+1555\"],\"events\":[\"message.received\"]}\n\n: keepalive\n\n",
      'id: dlv_1\nevent: message.received\ndata: {"event":"message.received","data":{"id":"msg_1"},"timestamp":1,"delivery_id":"dlv_1"}\r\n\r\nid: dlv_2\nevent: message.re',
      'ceived\ndata: {"event":"message.received","data":{"id":"msg_2"},"timestamp":2,"delivery_id":"dlv_2"}\n\n',
    ];
    let cancelled = false;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        const next = chunks.shift();
        if (next) controller.enqueue(new TextEncoder().encode(next));
      },
      cancel() {
        cancelled = true;
      },
    });
    const { fetch, seen } = scripted(new Response(body, { headers: { "content-type": "text/event-stream" } }));
    const sessions: string[] = [];
    const ids: string[] = [];
    for await (const event of client(fetch).listen({ from: "+1555", events: "message.received" }, { onSession: (s) => sessions.push(s.session) })) {
      ids.push(event.delivery_id);
      if (ids.length === 2) break;
    }
    expect(sessions).toEqual(["lsn_1"]);
    expect(ids).toEqual(["dlv_1", "dlv_2"]);
    expect(cancelled).toBe(true);
    expect(new URL(seen[0]!.url).search).toBe("?from=%2B1555&events=message.received");
  });

  it("reopens a dropped stream with its session, starts a new one when the session expired, and stops on a refused key", async () => {
    const stream = (text: string) => new Response(text, { headers: { "content-type": "text/event-stream" } });
    const session = (id: string) => `event: session\ndata: {"session":"${id}","lines":["+1555"],"events":["message.received"]}\n\n`;
    const event = (id: string) => `id: ${id}\nevent: message.received\ndata: {"event":"message.received","data":{"id":"m"},"timestamp":1,"delivery_id":"${id}"}\n\n`;
    const { fetch, seen } = scripted(
      stream(session("lsn_1") + event("dlv_1")), // then the server closes it
      new TypeError("fetch failed"), // server down
      apiError(503, "api_error", "unavailable"),
      stream(event("dlv_2")), // resumed: what happened meanwhile (the session event came first before)
      apiError(400, "invalid_request_error", "invalid_parameter_value", { param: "session" }), // too late
      stream(session("lsn_2") + event("dlv_3")),
    );
    const sessions: string[] = [];
    const reconnects: number[] = [];
    const ids: string[] = [];
    for await (const e of client(fetch).listen({ events: "message.received" }, { onSession: (s) => sessions.push(s.session), onReconnect: (r) => reconnects.push(r.attempt) })) {
      ids.push(e.delivery_id);
      if (ids.length === 3) break;
    }
    expect(ids).toEqual(["dlv_1", "dlv_2", "dlv_3"]);
    expect(sessions).toEqual(["lsn_1", "lsn_2"]);
    expect(reconnects).toEqual([1, 2, 3, 1, 2]); // back to 1 after a stream that carried events
    expect(seen.map((s) => new URL(s.url).searchParams.get("session"))).toEqual([null, "lsn_1", "lsn_1", "lsn_1", "lsn_1", null]);

    const refused = scripted(apiError(401, "authentication_error", "invalid_api_key"));
    await expect(client(refused.fetch).listen().next()).rejects.toBeInstanceOf(AuthenticationError);
    expect(refused.seen).toHaveLength(1);
    const once = scripted(stream(session("lsn_3")));
    const none: string[] = [];
    for await (const e of client(once.fetch).listen({}, { reconnect: false })) none.push(e.delivery_id);
    expect(none).toEqual([]);
  });

  it("throws when the stream cannot be opened at all, instead of retrying forever", async () => {
    const down = scripted(new TypeError("fetch failed"), new TypeError("fetch failed"), new TypeError("fetch failed"));
    await expect(client(down.fetch).listen().next()).rejects.toBeInstanceOf(ConnectionError);
    expect(down.seen).toHaveLength(3); // the first attempt and maxRetries (2) retries
  });

  it("reopens a stream gone silent, waits Retry-After, and lets a throwing onSession end it", async () => {
    const silent = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('event: session\ndata: {"session":"lsn_9","lines":[],"events":[]}\n\n'));
        // then nothing, not even a keep-alive
      },
    });
    const { fetch, seen } = scripted(
      new Response(silent, { headers: { "content-type": "text/event-stream" } }),
      apiError(503, "api_error", "server_shutting_down", {}, { "retry-after": "0.3" }),
      new Response('event: session\ndata: {"session":"lsn_9","lines":[],"events":[]}\n\nid: dlv_9\nevent: message.received\ndata: {"event":"message.received","data":{},"timestamp":1,"delivery_id":"dlv_9"}\n\n'),
    );
    const reconnects: { delayMs: number; code: unknown }[] = [];
    const started = Date.now();
    for await (const event of client(fetch).listen({}, { idleTimeoutMs: 100, onReconnect: (r) => reconnects.push({ delayMs: r.delayMs, code: (r.error as { code?: string }).code }) })) {
      expect(event.delivery_id).toBe("dlv_9");
      break;
    }
    expect(reconnects).toEqual([
      { delayMs: 1, code: "stream_idle" },
      { delayMs: 300, code: "server_shutting_down" },
    ]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(390);
    expect(seen.map((r) => new URL(r.url).searchParams.get("session"))).toEqual([null, "lsn_9", "lsn_9"]);

    const boom = scripted(new Response('event: session\ndata: {"session":"lsn_8","lines":[],"events":[]}\n\n'));
    const failing = client(boom.fetch).listen({}, {
      onSession: () => {
        throw new Error("handler bug");
      },
    });
    await expect(failing.next()).rejects.toThrow("handler bug");
    expect(boom.seen).toHaveLength(1);
  });
});

describe("client scheduling, capacity and pools", () => {
  it("schedules with send_at in the POST body, cancels with DELETE ?id=, reschedules with PATCH ?id= and a JSON body", async () => {
    const sendAt = Date.UTC(2026, 11, 1, 9);
    const item = (extra: Record<string, unknown>) => json(200, { object: "outbox_item", id: "obx_1", status: "pending", ...extra });
    const { fetch, seen } = scripted(
      accepted(),
      item({ status: "failed", error: "canceled", canceled_at: 1_000 }),
      item({ hold_reason: "scheduled", not_before: sendAt }),
      json(200, { object: "capacity", from: "pool_1", pool_id: "pool_1", lines: [] }),
      json(200, { data: [{ object: "pool", id: "pool_1", name: "support", line_ids: ["ln_1"], created_at: 1 }], has_more: false, next_cursor: null }),
    );
    const relay = client(fetch);
    await relay.messages.send({ ...send, send_at: sendAt });
    expect(await relay.outbox.cancel("obx_1")).toMatchObject({ status: "failed", error: "canceled", canceled_at: 1_000 });
    expect(await relay.outbox.reschedule("obx_1", sendAt)).toMatchObject({ hold_reason: "scheduled", not_before: sendAt });
    expect((await relay.capacity.get("pool_1")).pool_id).toBe("pool_1");
    expect((await relay.pools.list()).data.map((p) => p.name)).toEqual(["support"]);
    expect(seen.map((s) => `${s.method} ${new URL(s.url).pathname}${new URL(s.url).search}`)).toEqual([
      "POST /v1/messages",
      "DELETE /v1/outbox?id=obx_1",
      "PATCH /v1/outbox?id=obx_1",
      "GET /v1/capacity?from=pool_1",
      "GET /v1/pools",
    ]);
    expect(JSON.parse(seen[0]!.body!)).toEqual({ ...send, send_at: sendAt });
    expect(seen[1]!.body).toBeNull();
    expect(seen[1]!.headers.get("content-type")).toBeNull();
    expect(seen[2]!.body).toBe(`{"send_at":${sendAt}}`);
    expect(seen[2]!.headers.get("content-type")).toBe("application/json");
    // Only POSTs carry an Idempotency-Key (the server honours it on POST only).
    expect(seen.slice(1).map((s) => s.headers.get("idempotency-key"))).toEqual([null, null, null, null]);
  });

  it("a cancel retried after its answer was lost resolves with the canceled item; a real conflict still rejects", async () => {
    const canceled = { object: "outbox_item", id: "obx_1", status: "failed", error: "canceled", canceled_at: 1_000 };
    const notCancelable = () => apiError(409, "invalid_request_error", "outbox_item_not_cancelable", { param: "id" });
    // The first DELETE canceled it but its answer never came: the retry finds it canceled.
    const lost = scripted(new TypeError("socket hang up"), notCancelable(), json(200, canceled));
    expect(await client(lost.fetch).outbox.cancel("obx_1")).toEqual(canceled);
    expect(lost.seen.map((s) => `${s.method} ${new URL(s.url).search}`)).toEqual(["DELETE ?id=obx_1", "DELETE ?id=obx_1", "GET ?id=obx_1"]);
    // Sent before the cancel arrived: the 409 is the answer.
    const tooLate = scripted(notCancelable(), json(200, { ...canceled, status: "sent", error: null, canceled_at: null }));
    const error = await client(tooLate.fetch).outbox.cancel("obx_1").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidRequestError);
    expect(error).toMatchObject({ code: "outbox_item_not_cancelable", status: 409, param: "id" });
    // A key that may not read the outbox: the 409 stands too.
    const blind = scripted(notCancelable(), apiError(403, "authorization_error", "insufficient_scope"));
    await expect(client(blind.fetch).outbox.cancel("obx_1")).rejects.toMatchObject({ code: "outbox_item_not_cancelable" });
    const conflict = scripted(apiError(409, "invalid_request_error", "outbox_item_not_reschedulable", { param: "id" }));
    await expect(client(conflict.fetch).outbox.reschedule("obx_1", Date.now() + 60_000)).rejects.toMatchObject({ code: "outbox_item_not_reschedulable", status: 409 });
    expect(conflict.seen).toHaveLength(1); // a 409 conflict is not retried
  });
});

describe("client.call", () => {
  it("calls any declared operation by its ID: method, path, query and body as declared", async () => {
    const page = { object: "list", data: [], has_more: false, next_cursor: null };
    const { fetch, seen } = scripted(json(200, page), accepted(), json(200, { object: "outbox_item", id: "obx_1", status: "failed" }));
    const relay = client(fetch);
    expect(await relay.call("listChats", { query: { from: "+15550001000", limit: 5 } })).toMatchObject({ data: [], has_more: false });
    expect((await relay.call("sendMessage", { body: send })).id).toBe("obx_1");
    await relay.call("cancelOutboxItem", { query: { id: "obx_1" } });
    expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual([
      "GET https://relay.test/v1/chats?from=%2B15550001000&limit=5",
      "POST https://relay.test/v1/messages",
      "DELETE https://relay.test/v1/outbox?id=obx_1",
    ]);
    expect(JSON.parse(seen[1]!.body!)).toEqual(send);
    expect(seen[1]!.headers.get("idempotency-key")).toBeTruthy();
  });
});

/**
 * Scripted fake of SMS Gateway for Android's local server (capcom6/android-sms-gateway 0cdc5d8),
 * for tests: a real node:http server on 127.0.0.1, answering as the app's Ktor server does and
 * posting webhooks as the app's queue worker does.
 *
 * Source map (AG/ = app/src/main/java/me/capcom/smsgateway/modules/):
 *  - routes, Basic auth (401 with a challenge and no body), error bodies {"message": ...}:
 *    AG/localserver/WebService.kt; GET /health is unauthenticated
 *  - POST /messages validation, 202 body, 409 on a known id: AG/localserver/routes/MessagesRoutes.kt,
 *    domain/messages/PostMessageRequest.kt, AG/messages/MessagesService.kt, exceptions/ConflictException.kt
 *  - GET /messages/{id}: 404 without a body for an unknown id
 *  - webhooks upserted by id, URL rule, unknown event: AG/webhooks/WebHooksService.kt, routes/WebhooksRoutes.kt
 *  - GET /inbox (newest first, X-Total-Count, limit 1..500): AG/localserver/routes/InboxRoutes.kt
 *  - with `relay: true`, the cloud or private relay's third-party API instead: GET /inbox answers
 *    501 {"message":"Inbox API is not implemented yet"} (the relay server's inbox route, as of
 *    this writing), and POST /inbox/refresh {since, until, triggerWebhooks} answers 202 and has
 *    the phone post sms:received again for the SMS it holds in that range (new event IDs)
 *  - webhook envelope and payloads, one per recipient: AG/webhooks/domain/WebHookEventDTO.kt,
 *    payload/*.kt, EventsReceiver.kt; signing: plugins/PayloadSingingPlugin.kt; User-Agent:
 *    workers/WebhookQueueProcessorWorker.kt
 *  - JSON: Gson (nulls left out, dates yyyy-MM-dd'T'HH:mm:ss.SSSXXX in the phone's offset, a
 *    class's own fields before its superclass's)
 */
import { createHash, createHmac, randomBytes } from "node:crypto";
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import { listenLoopback, readBody } from "./http";

type FakeState = "Pending" | "Processed" | "Sent" | "Delivered" | "Failed";

interface FakeMessage {
  id: string;
  text: string;
  phoneNumbers: string[];
  withDeliveryReport: boolean;
  state: FakeState;
  recipients: { phoneNumber: string; state: FakeState; error: string | null }[];
  /** State → when it was entered (ms). */
  states: Partial<Record<FakeState, number>>;
}

interface FakeWebhook {
  id: string;
  url: string;
  event: string;
}

interface FakeRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  body: unknown;
  status: number;
}

interface FakeDelivery {
  event: string;
  envelopeId: string;
  webhookId: string;
  url: string;
  body: string;
  headers: Record<string, string>;
  status: number;
}

export interface WebhookPost {
  headers: Record<string, string>;
  body: string;
}

export interface FakeSmsGatewayOptions {
  username?: string;
  password?: string;
  signingKey?: string;
  /** The app's "insecure" build: webhooks to any http:// URL are accepted. */
  insecure?: boolean;
  /** Reached through the cloud or a private relay (see the header): no inbox listing, an inbox refresh. */
  relay?: boolean;
  /** The phone's UTC offset in minutes, used in every date it writes. Default +07:00. */
  offsetMinutes?: number;
  /** Posts a webhook and answers its status; default: a real POST with fetch. */
  deliver?: (url: string, post: WebhookPost) => Promise<number>;
}

interface FakeFaults {
  /** Answers for the next POST /messages, one used per request (nothing is stored); a string body is sent as HTML. */
  failNext: { status: number; body?: unknown; headers?: Record<string, string> }[];
  /** Next N POST /messages: the message is stored, then the connection drops without an answer. */
  dropAfterAccept: number;
  /** Delay before answering POST /messages (the message is stored first). */
  delayMs: number;
  /** Runs after a message is stored and before its 202 goes out (e.g. its webhooks first). */
  beforeAnswer: ((message: FakeMessage) => Promise<void>) | null;
  /** Webhooks are not posted (the phone is offline); they are kept in `undelivered`. */
  webhooksOff: boolean;
}

export interface FakeSmsGateway {
  url: string;
  username: string;
  password: string;
  signingKey: string;
  deviceId: string;
  messages: Map<string, FakeMessage>;
  webhooks: Map<string, FakeWebhook>;
  requests: FakeRequest[];
  deliveries: FakeDelivery[];
  undelivered: { event: string; payload: Record<string, unknown> }[];
  faults: FakeFaults;
  /** A contact texts the phone: stored in the inbox (once, as the app dedupes) and sms:received is emitted. */
  receive(input: { from: string; text: string; at?: number }): Promise<Record<string, unknown>>;
  /** The phone moves a message on (Sent, Delivered, Failed) and emits the webhook of each recipient. */
  progress(id: string, state: "Sent" | "Delivered" | "Failed", options?: { partsCount?: number; error?: string; emit?: boolean }): Promise<void>;
  /** Emits one event to every webhook registered for it, under a new event ID. */
  emit(event: string, payload: Record<string, unknown>, options?: EmitOptions): Promise<FakeDelivery[]>;
  /** The body, headers and signature of one webhook post, as the app would send it. */
  sign(body: string, options?: EmitOptions): Record<string, string>;
  /** Formats a date as the app's Gson does. */
  date(ms: number): string;
  close(): Promise<void>;
}

interface EmitOptions {
  /** Seconds added to X-Timestamp (a phone clock that is off, a replay). */
  skewSeconds?: number;
  /** Signs with another key. */
  key?: string;
}

const NANOID = "_-0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
function nanoid(size = 21): string {
  const bytes = randomBytes(size);
  let out = "";
  for (const b of bytes) out += NANOID[b & 63];
  return out;
}

/** Gson's yyyy-MM-dd'T'HH:mm:ss.SSSXXX in a fixed offset. */
function gsonDate(ms: number, offsetMinutes: number): string {
  const local = new Date(ms + offsetMinutes * 60_000).toISOString().slice(0, 23);
  if (offsetMinutes === 0) return `${local}Z`;
  const sign = offsetMinutes < 0 ? "-" : "+";
  const abs = Math.abs(offsetMinutes);
  return `${local}${sign}${String(Math.floor(abs / 60)).padStart(2, "0")}:${String(abs % 60).padStart(2, "0")}`;
}

/** Gson leaves out nulls and undefined. */
function gson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (v === null ? undefined : v));
}

const WEBHOOK_EVENTS = new Set(["sms:received", "sms:sent", "sms:delivered", "sms:failed", "system:ping", "sms:data-received", "mms:received", "mms:downloaded", "app:started", "sms:cancelled"]);
const EVENT_OF: Record<string, string> = { Sent: "sms:sent", Delivered: "sms:delivered", Failed: "sms:failed" };

export async function startFakeSmsGateway(options: FakeSmsGatewayOptions = {}): Promise<FakeSmsGateway> {
  const username = options.username ?? "sms";
  const password = options.password ?? `pw-${nanoid(8)}`;
  const signingKey = options.signingKey ?? nanoid(8);
  const offset = options.offsetMinutes ?? 7 * 60;
  const deviceId = `ffffffff${randomBytes(12).toString("hex")}`;
  const date = (ms: number) => gsonDate(ms, offset);
  const messages = new Map<string, FakeMessage>();
  const webhooks = new Map<string, FakeWebhook>();
  const inbox: { id: string; sender: string; text: string; at: number; payload: Record<string, unknown> }[] = [];
  const requests: FakeRequest[] = [];
  const deliveries: FakeDelivery[] = [];
  const undelivered: { event: string; payload: Record<string, unknown> }[] = [];
  const faults: FakeFaults = { failNext: [], dropAfterAccept: 0, delayMs: 0, beforeAnswer: null, webhooksOff: false };
  const deliver =
    options.deliver ??
    (async (url: string, post: WebhookPost) => (await fetch(url, { method: "POST", headers: post.headers, body: post.body })).status);

  /** Message.kt as MessagesRoutes.toDomain writes it (includeContent for a single message). */
  const domain = (m: FakeMessage) => ({
    id: m.id,
    deviceId,
    state: m.state,
    isHashed: false,
    isEncrypted: false,
    textMessage: { text: m.text },
    recipients: m.recipients.map((r) => ({ phoneNumber: r.phoneNumber, state: r.state, error: r.error })),
    states: Object.fromEntries(Object.entries(m.states).map(([s, at]) => [s, date(at!)])),
  });

  function sign(body: string, o: EmitOptions = {}): Record<string, string> {
    const timestamp = String(Math.floor(Date.now() / 1000) + (o.skewSeconds ?? 0));
    const signature = createHmac("sha256", o.key ?? signingKey).update(body + timestamp, "utf8").digest("hex");
    return {
      "content-type": "application/json",
      "user-agent": "me.capcom.smsgateway/1.60.0",
      "x-timestamp": timestamp,
      "x-signature": signature,
    };
  }

  async function emit(event: string, payload: Record<string, unknown>, o: EmitOptions = {}): Promise<FakeDelivery[]> {
    if (faults.webhooksOff) {
      undelivered.push({ event, payload });
      return [];
    }
    const out: FakeDelivery[] = [];
    for (const hook of webhooks.values()) {
      if (hook.event !== event) continue;
      const envelopeId = nanoid();
      const body = gson({ id: envelopeId, webhookId: hook.id, event, deviceId, payload });
      const headers = sign(body, o);
      const status = await deliver(hook.url, { headers, body });
      const d = { event, envelopeId, webhookId: hook.id, url: hook.url, body, headers, status };
      deliveries.push(d);
      out.push(d);
    }
    return out;
  }

  function send(res: ServerResponse, status: number, body?: unknown, headers: Record<string, string> = {}) {
    const text = body === undefined ? "" : gson(body);
    res.writeHead(status, { ...(text ? { "content-type": "application/json; charset=UTF-8" } : {}), "content-length": Buffer.byteLength(text), ...headers });
    res.end(text);
  }

  function authorized(req: IncomingMessage): boolean {
    const header = req.headers.authorization ?? "";
    if (!header.startsWith("Basic ")) return false;
    const decoded = Buffer.from(header.slice(6), "base64").toString("utf8");
    return decoded === `${username}:${password}`;
  }

  async function postMessage(req: IncomingMessage, res: ServerResponse, body: unknown): Promise<number> {
    const fail = faults.failNext.shift();
    if (fail) {
      if (typeof fail.body === "string") {
        // A proxy's page in front of the phone.
        res.writeHead(fail.status, { "content-type": "text/html", "content-length": Buffer.byteLength(fail.body) });
        res.end(fail.body);
      } else {
        send(res, fail.status, fail.body, fail.headers);
      }
      return fail.status;
    }
    const b = (body ?? {}) as Record<string, unknown>;
    const text = (b.textMessage as { text?: unknown } | undefined)?.text;
    const kinds = [b.textMessage, b.dataMessage, b.message].filter((k) => k != null);
    const refuse = (message: string) => (send(res, 400, { message }), 400);
    if (kinds.length === 0) return refuse("Must specify exactly one of: textMessage, dataMessage, or message");
    if (kinds.length > 1) return refuse("Cannot specify multiple message types simultaneously");
    if (typeof text !== "string" || text === "") return refuse("Text message is empty");
    if (!Array.isArray(b.phoneNumbers) || b.phoneNumbers.length === 0) return refuse("Empty phone numbers list");
    const id = typeof b.id === "string" && b.id ? b.id : nanoid();
    if (messages.has(id)) {
      send(res, 409, { message: "Message with the same ID already exists" });
      return 409;
    }
    const now = Date.now();
    const message: FakeMessage = {
      id,
      text,
      phoneNumbers: b.phoneNumbers.map(String),
      withDeliveryReport: b.withDeliveryReport !== false,
      state: "Pending",
      recipients: b.phoneNumbers.map((p) => ({ phoneNumber: String(p), state: "Pending" as const, error: null })),
      states: { Pending: now },
    };
    messages.set(id, message);
    if (faults.beforeAnswer) await faults.beforeAnswer(message);
    if (faults.dropAfterAccept > 0) {
      faults.dropAfterAccept--;
      req.socket.destroy();
      return 0;
    }
    if (faults.delayMs > 0) await new Promise((r) => setTimeout(r, faults.delayMs));
    send(res, 202, domain(message));
    return 202;
  }

  async function route(req: IncomingMessage, res: ServerResponse, url: URL, body: unknown): Promise<number> {
    const path = url.pathname.replace(/\/+$/, "") || "/";
    const method = req.method ?? "GET";
    if (method === "GET" && path === "/health") {
      send(res, 200, { version: "1.60.0", releaseId: 60000, status: "pass", checks: { "messages:failed": { description: "Failed messages for last hour", observedUnit: "messages", observedValue: 0, status: "pass" } } });
      return 200;
    }
    if (!authorized(req)) {
      send(res, 401, undefined, { "www-authenticate": 'Basic realm="Access to SMS Gateway", charset=UTF-8' });
      return 401;
    }
    const messagesRoute = /^\/messages?(?:\/([^/]+))?$/.exec(path);
    const webhooksRoute = /^\/webhooks?(?:\/([^/]+))?$/.exec(path);
    if (method === "GET" && path === "/") {
      send(res, 200, { status: "ok", model: "Pixel 7" });
      return 200;
    }
    if (messagesRoute && method === "POST" && !messagesRoute[1]) return postMessage(req, res, body);
    if (messagesRoute && method === "GET" && messagesRoute[1]) {
      const m = messages.get(decodeURIComponent(messagesRoute[1]));
      if (!m) {
        send(res, 404);
        return 404;
      }
      send(res, 200, domain(m));
      return 200;
    }
    if (webhooksRoute && method === "GET" && !webhooksRoute[1]) {
      send(res, 200, [...webhooks.values()].map((w) => ({ id: w.id, url: w.url, event: w.event, source: "Local" })));
      return 200;
    }
    if (webhooksRoute && method === "POST" && !webhooksRoute[1]) {
      const w = (body ?? {}) as Record<string, unknown>;
      const hookUrl = typeof w.url === "string" ? w.url : "";
      let localhost = false;
      try {
        localhost = new URL(hookUrl).protocol === "http:" && new URL(hookUrl).hostname === "127.0.0.1";
      } catch {
        localhost = false;
      }
      const valid = /^https:\/\//i.test(hookUrl) || (options.insecure && /^http:\/\//i.test(hookUrl)) || localhost;
      if (!valid) {
        send(res, 400, { message: "url must start with https:// or http://127.0.0.1" });
        return 400;
      }
      if (typeof w.event !== "string" || !WEBHOOK_EVENTS.has(w.event)) {
        send(res, 400, { message: "Unsupported event" });
        return 400;
      }
      const id = typeof w.id === "string" && w.id ? w.id : nanoid();
      webhooks.set(id, { id, url: hookUrl, event: w.event });
      send(res, 201, { id, url: hookUrl, event: w.event, source: "Local" });
      return 201;
    }
    if (webhooksRoute && method === "DELETE" && webhooksRoute[1]) {
      webhooks.delete(decodeURIComponent(webhooksRoute[1]));
      send(res, 204);
      return 204;
    }
    if (options.relay && method === "GET" && path === "/inbox") {
      // The relay's own answer, word for word (its third-party inbox list handler returns
      // fiber.NewError(501, ...) with this text): our adapter must fall back to /inbox/refresh.
      send(res, 501, { message: "Inbox API is not implemented yet" });
      return 501;
    }
    if (method === "POST" && path === "/inbox/refresh") {
      const r = (body ?? {}) as { since?: unknown; until?: unknown; triggerWebhooks?: unknown };
      const since = typeof r.since === "string" ? Date.parse(r.since) : NaN;
      const until = typeof r.until === "string" ? Date.parse(r.until) : NaN;
      if (Number.isNaN(since) || Number.isNaN(until)) return (send(res, 400, { message: "since and until are required" }), 400);
      send(res, 202);
      if (r.triggerWebhooks === true) {
        // The phone re-reads its inbox and posts each SMS again, under new event IDs.
        const again = inbox.filter((m) => m.at >= since && m.at <= until).map((m) => emit("sms:received", m.payload));
        void Promise.all(again);
      }
      return 202;
    }
    if (method === "GET" && path === "/inbox") {
      const q = url.searchParams;
      const limit = Number(q.get("limit") ?? 50);
      const offsetN = Number(q.get("offset") ?? 0);
      if (!(limit >= 1 && limit <= 500)) return (send(res, 400, { message: "limit must be between 1 and 500" }), 400);
      if (!(offsetN >= 0)) return (send(res, 400, { message: "offset must be >= 0" }), 400);
      const from = q.get("from") ? Date.parse(q.get("from")!) : 0;
      const to = q.get("to") ? Date.parse(q.get("to")!) : Date.now();
      if (Number.isNaN(from)) return (send(res, 400, { message: "Invalid from datetime" }), 400);
      if (Number.isNaN(to)) return (send(res, 400, { message: "Invalid to datetime" }), 400);
      const type = q.get("type");
      const rows = inbox
        .filter((m) => m.at >= from && m.at <= to && (!type || type === "SMS"))
        .sort((a, b) => b.at - a.at || (a.id < b.id ? 1 : -1));
      const page = rows.slice(offsetN, offsetN + limit);
      send(
        res,
        200,
        page.map((m) => ({ id: m.id, type: "SMS", sender: m.sender, simNumber: 1, contentPreview: m.text, createdAt: date(m.at), attachments: [] })),
        { "x-total-count": String(rows.length) },
      );
      return 200;
    }
    send(res, 404);
    return 404;
  }

  const server = await listenLoopback(async (req, res) => {
    const raw = (await readBody(req)).toString("utf8");
    const url = new URL(req.url ?? "/", "http://phone.test");
    let body: unknown = null;
    const record: FakeRequest = { method: req.method ?? "", path: url.pathname, query: url.searchParams, headers: req.headers, body: null, status: 0 };
    requests.push(record);
    if (raw) {
      try {
        body = JSON.parse(raw);
      } catch {
        // Ktor's content negotiation: a body that is not JSON is a BadRequestException.
        send(res, 400, { message: "Failed to convert request body to class" });
        record.status = 400;
        return;
      }
    }
    record.body = body;
    try {
      record.status = await route(req, res, url, body);
    } catch (err) {
      record.status = 500;
      if (!res.headersSent) send(res, 500, { message: (err as Error).message });
    }
  });

  return {
    url: server.url,
    username,
    password,
    signingKey,
    deviceId,
    messages,
    webhooks,
    requests,
    deliveries,
    undelivered,
    faults,
    sign,
    date,
    emit,

    async receive({ from, text, at }) {
      // The SMS's own time is whole seconds or ms as the modem gives it; ms here.
      const when = at ?? Date.now();
      // IncomingMessagesService.buildId: "text:" + a hash of address, date and text; processed once.
      const id = `text:${createHash("sha256").update(`${from}|${when}|${text}`).digest("hex").slice(0, 8)}`;
      const payload = {
        message: text,
        receivedAt: date(when),
        messageId: createHash("sha1").update(text).digest("hex").slice(0, 8),
        sender: from,
        simNumber: 1,
        phoneNumber: from,
      };
      if (!inbox.some((m) => m.id === id)) {
        inbox.push({ id, sender: from, text, at: when, payload });
        await emit("sms:received", payload);
      }
      return payload;
    },

    async progress(id, state, o = {}) {
      const m = messages.get(id);
      if (!m) throw new Error(`the fake holds no message ${id}`);
      const now = Date.now();
      m.state = state;
      m.states[state] = now;
      for (const r of m.recipients) {
        r.state = state;
        r.error = state === "Failed" ? (o.error ?? "Send result: RESULT_ERROR_GENERIC_FAILURE") : null;
      }
      if (o.emit === false) return;
      const event = EVENT_OF[state]!;
      for (const r of m.recipients) {
        // The subclass's own fields first, then MessageEventPayload's (sender: the SIM's number, unknown here).
        const own =
          state === "Sent"
            ? { partsCount: o.partsCount ?? -1, sentAt: date(now) }
            : state === "Delivered"
              ? { deliveredAt: date(now) }
              : { failedAt: date(now), reason: r.error ?? "Unknown" };
        await emit(event, { ...own, messageId: m.id, recipient: r.phoneNumber, simNumber: 1, phoneNumber: r.phoneNumber });
      }
    },

    close: server.close,
  };
}

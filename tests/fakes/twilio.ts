/**
 * Scripted fake of Twilio Programmable Messaging (REST 2010-04-01) for tests: a node:http server on
 * 127.0.0.1 shaped as Twilio answers (PLATFORMS.md §3, specs/twilio-messages.openapi.json):
 *  - Basic auth AccountSid:AuthToken on every call, else 401 `{"code":20003,"message":"Authenticate",…}`;
 *  - POST …/Messages.json (form) → 201 message JSON: RFC 2822 dates, string num_segments / num_media,
 *    status `queued` (`accepted` with a Messaging Service), no date_sent until it leaves the queue;
 *    refusals as JSON `{code, message, more_info, status}` (21211, 21602, 21603, 21604, 21606, 21610, 21617);
 *  - GET …/Messages.json with To / From / DateSent / DateSent< / DateSent> (dates only; messages
 *    without date_sent never match a date filter), PageSize, PageToken → `messages` + paging fields,
 *    newest first; GET …/Messages/{Sid}.json; GET …/Messages/{Sid}/Media.json;
 *  - media content at …/Messages/{Sid}/Media/{ME…} (Basic auth when enforced) → 307 to a CDN path,
 *    on the fake's own origin: a test whose line downloads it sets PROVIDER_MEDIA_FROM_BASE_URL=true;
 *  - status callbacks and inbound webhooks posted form-encoded and signed as Twilio signs
 *    (X-Twilio-Signature: base64 HMAC-SHA1 of URL + sorted name/value pairs), handed to `deliver`.
 */
import { createHmac, randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { listenLoopback, readBody } from "./http";

export interface DeliveredAnswer {
  status: number;
  contentType: string | null;
  body: string;
}

export interface FakeTwilioOptions {
  accountSid?: string;
  authToken?: string;
  /** Numbers the account owns (valid From values); the first is the Messaging Service's sender. */
  numbers?: string[];
  messagingServiceSid?: string;
  /** Posts a webhook (form body, signed headers) to `url`: the test routes it to our inbound route. */
  deliver: (url: string, init: { body: string; headers: Record<string, string> }) => Promise<DeliveredAnswer>;
}

interface FakeMedia {
  sid: string;
  contentType: string;
  bytes: Uint8Array;
}

interface FakeMessage {
  sid: string;
  accountSid: string;
  messagingServiceSid: string | null;
  from: string;
  to: string;
  body: string;
  status: string;
  direction: "inbound" | "outbound-api";
  numSegments: number;
  media: FakeMedia[];
  /** What the create asked for (outbound). */
  mediaUrls: string[];
  errorCode: number | null;
  dateCreated: number;
  dateSent: number | null;
  dateUpdated: number;
  statusCallback: string | null;
}

interface FakeRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  form: URLSearchParams | null;
  authorized: boolean;
}

interface Callback {
  url: string;
  params: [string, string][];
  answer: DeliveredAnswer;
}

type CreateFault =
  /** An error answer, as Twilio gives it. */
  | { status: number; code: number; message: string; retryAfter?: number }
  /** The message is created, but its answer is written only after `ms` (the caller has given up). */
  | { hang: "after-create"; ms: number }
  /** Nothing is created; after `ms` the connection is cut. */
  | { hang: "before-create"; ms: number };

interface FakeTwilioFaults {
  /** One per create call, in order. */
  creates: CreateFault[];
  /** Statuses whose callbacks are posted (and answered) before the create's own answer is written. */
  reportsBeforeAnswer: string[];
  /** After a create, the message leaves the queue (status sent, date_sent set, `sent` callback) after this many ms; null: it stays queued until `progress`. */
  autoSendMs: number | null;
  /** Next N list calls answer 503. */
  listErrors: number;
  /** "Enforce HTTP Auth on Media URLs" (on by default, as Twilio recommends). */
  mediaAuth: boolean;
}

export interface FakeTwilio {
  url: string;
  accountSid: string;
  authToken: string;
  numbers: string[];
  messagingServiceSid: string;
  messages: FakeMessage[];
  requests: FakeRequest[];
  callbacks: Callback[];
  /** Recipients who replied STOP: creates to them answer 21610. */
  optedOut: Set<string>;
  faults: FakeTwilioFaults;
  /** The number's "A message comes in" webhook, as the operator set it in the console. */
  incomingUrl: string | null;
  /** A contact texts one of the account's numbers: the message is stored and its webhook posted (unless deliver is false). */
  receive(opts: ReceiveOptions): Promise<{ message: FakeMessage; params: [string, string][]; answer: DeliveredAnswer | null }>;
  /** Moves a message to `status` and posts its status callback (with ErrorCode / RawDlrDoneDate as Twilio would). */
  progress(sid: string, status: string, extra?: { errorCode?: number; rawDlrDoneDate?: string; post?: boolean }): Promise<Callback | null>;
  /** The params of the status callback Twilio would post for a message in `status`. */
  callbackParams(sid: string, status: string, extra?: { errorCode?: number; rawDlrDoneDate?: string }): [string, string][];
  /** Posts a signed form to `url`, as Twilio posts its webhooks. */
  post(url: string, params: [string, string][]): Promise<DeliveredAnswer>;
  /** Twilio's signature of a request to `url` with these params. */
  sign(url: string, params: [string, string][]): string;
  createRequests(): FakeRequest[];
  /** Resolves when every callback started so far has been answered. */
  idle(): Promise<void>;
  close(): Promise<void>;
}

interface ReceiveOptions {
  from: string;
  to?: string;
  body?: string;
  media?: { contentType: string; bytes: Uint8Array }[];
  /** Advanced Opt-Out's OptOutType (STOP, START, HELP). */
  optOutType?: string;
  deliver?: boolean;
  /** Sent at (default now). */
  at?: number;
}

const API = "/2010-04-01";
const OPT_OUT = ["STOP", "STOPALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT", "REVOKE", "OPTOUT"];
const OPT_IN = ["START", "YES", "UNSTOP"];

const hex = (n: number) => randomBytes(n).toString("hex");
export const newSid = (prefix: string) => `${prefix}${hex(16)}`;

/** "Thu, 24 Aug 2023 05:01:45 +0000" */
function rfc2822(ms: number): string {
  return new Date(ms).toUTCString().replace("GMT", "+0000");
}

/** Twilio's signature: base64 HMAC-SHA1 over the URL then each name+value, names sorted (values sorted within a name). */
export function twilioSign(authToken: string, url: string, params: [string, string][]): string {
  const sorted = [...params].sort(([a, av], [b, bv]) => (a < b ? -1 : a > b ? 1 : av < bv ? -1 : av > bv ? 1 : 0));
  const data = sorted.reduce((acc, [name, value]) => acc + name + value, url);
  return createHmac("sha1", authToken).update(Buffer.from(data, "utf8")).digest("base64");
}

/** GSM-7 texts go 160 characters to a segment (153 when split); anything else 70 UTF-16 units (67). */
function segments(body: string): number {
  if (!body) return 1;
  const gsm = /^[A-Za-z0-9 \r\n@£$¥èéùìòÇØøÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ!"#¤%&'()*+,\-./:;<=>?¡ÄÖÑÜ§¿äöñüà]*$/.test(body);
  const [single, part] = gsm ? [160, 153] : [70, 67];
  return body.length <= single ? 1 : Math.ceil(body.length / part);
}

function validCallback(url: string): boolean {
  try {
    const u = new URL(url);
    return (u.protocol === "http:" || u.protocol === "https:") && !!u.hostname && !u.hostname.includes("_");
  } catch {
    return false;
  }
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(text), ...headers });
  res.end(text);
}

function twilioError(res: ServerResponse, status: number, code: number, message: string, headers: Record<string, string> = {}) {
  json(res, status, { code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status }, headers);
}

export async function startFakeTwilio(options: FakeTwilioOptions): Promise<FakeTwilio> {
  const accountSid = options.accountSid ?? newSid("AC");
  const authToken = options.authToken ?? hex(16);
  const numbers = options.numbers ?? [`+1415555${String(1000 + Math.floor(Math.random() * 8999))}`];
  const messagingServiceSid = options.messagingServiceSid ?? newSid("MG");
  const messages: FakeMessage[] = [];
  const requests: FakeRequest[] = [];
  const callbacks: Callback[] = [];
  const optedOut = new Set<string>();
  const faults: FakeTwilioFaults = { creates: [], reportsBeforeAnswer: [], autoSendMs: null, listErrors: 0, mediaAuth: true };
  const pending = new Set<Promise<unknown>>();
  const timers = new Set<NodeJS.Timeout>();
  const cdn = new Map<string, FakeMedia>();
  const account = `${API}/Accounts/${accountSid}`;
  let origin = "";

  const track = <T>(p: Promise<T>): Promise<T> => {
    pending.add(p);
    void p.finally(() => pending.delete(p)).catch(() => undefined);
    return p;
  };
  const later = (ms: number, fn: () => void) => {
    const t = setTimeout(() => {
      timers.delete(t);
      fn();
    }, ms);
    timers.add(t);
  };

  function resource(m: FakeMessage) {
    return {
      account_sid: m.accountSid,
      api_version: "2010-04-01",
      body: m.body,
      date_created: rfc2822(m.dateCreated),
      date_sent: m.dateSent === null ? null : rfc2822(m.dateSent),
      date_updated: rfc2822(m.dateUpdated),
      direction: m.direction,
      error_code: m.errorCode,
      error_message: m.errorCode === null ? null : `Error ${m.errorCode}`,
      from: m.from,
      messaging_service_sid: m.messagingServiceSid,
      num_media: String(m.media.length || m.mediaUrls.length),
      num_segments: String(m.numSegments),
      price: null,
      price_unit: "USD",
      sid: m.sid,
      status: m.status,
      subresource_uris: { media: `${account}/Messages/${m.sid}/Media.json` },
      to: m.to,
      uri: `${account}/Messages/${m.sid}.json`,
    };
  }

  function sign(url: string, params: [string, string][]) {
    return twilioSign(authToken, url, params);
  }

  async function post(url: string, params: [string, string][]): Promise<DeliveredAnswer> {
    const body = new URLSearchParams(params).toString();
    const headers = {
      "content-type": "application/x-www-form-urlencoded; charset=utf-8",
      "x-twilio-signature": sign(url, params),
      "i-twilio-idempotency-token": randomBytes(16).toString("hex"),
      "user-agent": "TwilioProxy/1.1",
    };
    return track(options.deliver(url, { body, headers }));
  }

  function callbackParams(sid: string, status: string, extra: { errorCode?: number; rawDlrDoneDate?: string } = {}): [string, string][] {
    const m = messages.find((x) => x.sid === sid);
    if (!m) throw new Error(`fake twilio: no message ${sid}`);
    const params: [string, string][] = [
      ["SmsSid", m.sid],
      ["SmsStatus", status],
      ["MessageStatus", status],
      ["To", m.to],
      ...(m.messagingServiceSid ? ([["MessagingServiceSid", m.messagingServiceSid]] as [string, string][]) : []),
      ["MessageSid", m.sid],
      ["AccountSid", m.accountSid],
      ["From", m.from],
      ["ApiVersion", "2010-04-01"],
    ];
    if (extra.errorCode !== undefined) params.push(["ErrorCode", String(extra.errorCode)]);
    if (extra.rawDlrDoneDate) params.push(["RawDlrDoneDate", extra.rawDlrDoneDate]);
    return params;
  }

  async function progress(sid: string, status: string, extra: { errorCode?: number; rawDlrDoneDate?: string; post?: boolean } = {}): Promise<Callback | null> {
    const m = messages.find((x) => x.sid === sid);
    if (!m) throw new Error(`fake twilio: no message ${sid}`);
    m.status = status;
    m.dateUpdated = Date.now();
    if (status === "sent" && m.dateSent === null) m.dateSent = Date.now();
    if (extra.errorCode !== undefined) m.errorCode = extra.errorCode;
    if (!m.statusCallback || extra.post === false) return null;
    const params = callbackParams(sid, status, extra);
    const answer = await post(m.statusCallback, params);
    const cb = { url: m.statusCallback, params, answer };
    callbacks.push(cb);
    return cb;
  }

  async function createMessage(form: URLSearchParams, res: ServerResponse): Promise<void> {
    const to = form.get("To");
    const from = form.get("From");
    const service = form.get("MessagingServiceSid");
    const body = form.get("Body") ?? "";
    const mediaUrls = form.getAll("MediaUrl");
    const callback = form.get("StatusCallback");
    if (!to) return twilioError(res, 400, 21604, "A 'To' phone number is required.");
    if (!from && !service) return twilioError(res, 400, 21603, "A 'From' phone number is required.");
    if (!body && mediaUrls.length === 0) return twilioError(res, 400, 21602, "Message body is required.");
    if (!/^\+[1-9]\d{6,14}$/.test(to)) return twilioError(res, 400, 21211, `The 'To' number ${to} is not a valid phone number.`);
    if (service && service !== messagingServiceSid) return twilioError(res, 400, 21701, `The Messaging Service Sid ${service} is invalid.`);
    if (from && !numbers.includes(from)) return twilioError(res, 400, 21606, `The From phone number ${from} is not a valid, SMS-capable inbound phone number or short code for your account.`);
    if (optedOut.has(to)) return twilioError(res, 400, 21610, "Attempt to send to unsubscribed recipient");
    if (body.length > 1600) return twilioError(res, 400, 21617, "The concatenated message body exceeds the 1600 character limit.");
    // "URL must contain a valid hostname and underscores are not allowed" (in the hostname).
    if (callback && !validCallback(callback)) return twilioError(res, 400, 21609, "Invalid StatusCallback url");
    const fault = faults.creates.shift();
    if (fault && "status" in fault) {
      return twilioError(res, fault.status, fault.code, fault.message, fault.retryAfter !== undefined ? { "retry-after": String(fault.retryAfter) } : {});
    }
    if (fault && fault.hang === "before-create") {
      later(fault.ms, () => res.destroy());
      return;
    }
    const now = Date.now();
    const m: FakeMessage = {
      sid: newSid(mediaUrls.length ? "MM" : "SM"),
      accountSid,
      messagingServiceSid: service ? messagingServiceSid : null,
      from: from ?? numbers[0]!,
      to,
      body,
      status: service ? "accepted" : "queued",
      direction: "outbound-api",
      numSegments: segments(body),
      media: [],
      mediaUrls,
      errorCode: null,
      dateCreated: now,
      dateSent: null,
      dateUpdated: now,
      statusCallback: callback,
    };
    messages.push(m);
    const answer = resource(m);
    for (const status of faults.reportsBeforeAnswer) {
      m.status = status;
      if (status === "sent") m.dateSent = Date.now();
      if (m.statusCallback) {
        const params = callbackParams(m.sid, status);
        callbacks.push({ url: m.statusCallback, params, answer: await post(m.statusCallback, params) });
      }
    }
    if (faults.autoSendMs !== null) later(faults.autoSendMs, () => void track(progress(m.sid, "sent")));
    if (fault && fault.hang === "after-create") {
      later(fault.ms, () => {
        if (!res.destroyed) json(res, 201, answer);
      });
      return;
    }
    json(res, 201, answer);
  }

  /** A date filter value (YYYY-MM-DD, or a date-time: Twilio reads the date) as YYYY-MM-DD. */
  const day = (v: string) => v.slice(0, 10);
  const sentDay = (m: FakeMessage) => (m.dateSent === null ? null : new Date(m.dateSent).toISOString().slice(0, 10));

  function listMessages(query: URLSearchParams, path: string, res: ServerResponse): void {
    if (faults.listErrors > 0) {
      faults.listErrors--;
      return twilioError(res, 503, 20500, "Service Unavailable");
    }
    const size = Number(query.get("PageSize") ?? "50");
    if (!Number.isInteger(size) || size < 1 || size > 1000) return twilioError(res, 400, 20001, "PageSize must be between 1 and 1000");
    const to = query.get("To");
    const from = query.get("From");
    const on = query.get("DateSent");
    const before = query.get("DateSent<");
    const after = query.get("DateSent>");
    const matching = messages
      .filter((m) => (!to || m.to === to) && (!from || m.from === from))
      .filter((m) => {
        if (!on && !before && !after) return true;
        const d = sentDay(m);
        if (d === null) return false;
        return (!on || d === day(on)) && (!before || d <= day(before)) && (!after || d >= day(after));
      })
      .sort((a, b) => b.dateCreated - a.dateCreated || (a.sid < b.sid ? 1 : -1));
    const token = query.get("PageToken");
    const start = token ? matching.findIndex((m) => `PA${m.sid}` === token) : 0;
    if (start < 0) return twilioError(res, 400, 20001, "Invalid PageToken");
    const page = Number(query.get("Page") ?? "0");
    const items = matching.slice(start, start + size);
    const base = new URLSearchParams(query);
    base.delete("PageToken");
    base.delete("Page");
    base.set("PageSize", String(size));
    const link = (p: number, tokenSid?: string) => {
      const q = new URLSearchParams(base);
      q.set("Page", String(p));
      if (tokenSid) q.set("PageToken", `PA${tokenSid}`);
      return `${path}?${q.toString()}`;
    };
    const next = matching[start + size];
    json(res, 200, {
      messages: items.map(resource),
      end: start + items.length - 1,
      first_page_uri: link(0),
      next_page_uri: next ? link(page + 1, next.sid) : null,
      page,
      page_size: size,
      previous_page_uri: page > 0 ? link(page - 1) : null,
      start,
      uri: `${path}?${query.toString()}`,
    });
  }

  function mediaResource(m: FakeMessage, x: FakeMedia) {
    return {
      account_sid: accountSid,
      content_type: x.contentType,
      date_created: rfc2822(m.dateCreated),
      date_updated: rfc2822(m.dateCreated),
      parent_sid: m.sid,
      sid: x.sid,
      uri: `${account}/Messages/${m.sid}/Media/${x.sid}.json`,
    };
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://twilio.test");
    const raw = await readBody(req);
    const expected = `Basic ${Buffer.from(`${accountSid}:${authToken}`).toString("base64")}`;
    const authorized = req.headers.authorization === expected;
    const isForm = String(req.headers["content-type"] ?? "").startsWith("application/x-www-form-urlencoded");
    requests.push({ method: req.method ?? "", path: url.pathname, query: url.searchParams, form: isForm ? new URLSearchParams(raw.toString("utf8")) : null, authorized });

    // The media store behind Twilio's redirect: a short-lived URL, no credentials.
    const cdnHit = /^\/mms-cdn\/(ME[0-9a-f]{32})$/.exec(url.pathname);
    if (cdnHit && req.method === "GET") {
      const media = cdn.get(cdnHit[1]!);
      if (!media) return twilioError(res, 404, 20404, "Not found");
      res.writeHead(200, { "content-type": media.contentType, "content-length": media.bytes.byteLength });
      res.end(Buffer.from(media.bytes));
      return;
    }

    const mediaContent = new RegExp(`^${account}/Messages/((?:SM|MM)[0-9a-f]{32})/Media/(ME[0-9a-f]{32})$`).exec(url.pathname);
    if (mediaContent && req.method === "GET") {
      if (faults.mediaAuth && !authorized) return twilioError(res, 401, 20003, "Authenticate", { "www-authenticate": 'Basic realm="Twilio API"' });
      const m = messages.find((x) => x.sid === mediaContent[1]);
      const media = m?.media.find((x) => x.sid === mediaContent[2]);
      if (!media) return twilioError(res, 404, 20404, `The requested resource ${url.pathname} was not found`);
      cdn.set(media.sid, media);
      res.writeHead(307, { location: `${origin}/mms-cdn/${media.sid}` });
      res.end();
      return;
    }

    if (!authorized) return twilioError(res, 401, 20003, "Authenticate", { "www-authenticate": 'Basic realm="Twilio API"' });
    if (!url.pathname.startsWith(`${account}/`)) return twilioError(res, 404, 20404, `The requested resource ${url.pathname} was not found`);

    if (url.pathname === `${account}/Messages.json`) {
      if (req.method === "POST") {
        if (!isForm) return twilioError(res, 400, 20001, "Unsupported Content-Type");
        return createMessage(new URLSearchParams(raw.toString("utf8")), res);
      }
      if (req.method === "GET") return listMessages(url.searchParams, url.pathname, res);
    }
    const one = new RegExp(`^${account}/Messages/((?:SM|MM)[0-9a-f]{32})\\.json$`).exec(url.pathname);
    if (one && req.method === "GET") {
      const m = messages.find((x) => x.sid === one[1]);
      return m ? json(res, 200, resource(m)) : twilioError(res, 404, 20404, `The requested resource ${url.pathname} was not found`);
    }
    const mediaList = new RegExp(`^${account}/Messages/((?:SM|MM)[0-9a-f]{32})/Media\\.json$`).exec(url.pathname);
    if (mediaList && req.method === "GET") {
      const m = messages.find((x) => x.sid === mediaList[1]);
      if (!m) return twilioError(res, 404, 20404, `The requested resource ${url.pathname} was not found`);
      const path = url.pathname;
      return json(res, 200, {
        media_list: m.media.map((x) => mediaResource(m, x)),
        end: m.media.length - 1,
        first_page_uri: `${path}?PageSize=50&Page=0`,
        next_page_uri: null,
        page: 0,
        page_size: 50,
        previous_page_uri: null,
        start: 0,
        uri: `${path}?PageSize=50&Page=0`,
      });
    }
    twilioError(res, 404, 20404, `The requested resource ${url.pathname} was not found`);
  }

  const server = await listenLoopback((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) twilioError(res, 500, 20500, `fake twilio: ${(err as Error).message}`);
      else res.destroy();
    });
  });
  origin = server.url;

  const fake: FakeTwilio = {
    url: origin,
    accountSid,
    authToken,
    numbers,
    messagingServiceSid,
    messages,
    requests,
    callbacks,
    optedOut,
    faults,
    incomingUrl: null,

    async receive(opts) {
      const now = opts.at ?? Date.now();
      const media = (opts.media ?? []).map((x) => ({ sid: newSid("ME"), contentType: x.contentType, bytes: x.bytes }));
      const m: FakeMessage = {
        sid: newSid(media.length ? "MM" : "SM"),
        accountSid,
        messagingServiceSid: null,
        from: opts.from,
        to: opts.to ?? numbers[0]!,
        body: opts.body ?? "",
        status: "received",
        direction: "inbound",
        numSegments: segments(opts.body ?? ""),
        media,
        mediaUrls: [],
        errorCode: null,
        dateCreated: now,
        dateSent: now,
        dateUpdated: now,
        statusCallback: null,
      };
      messages.push(m);
      // Twilio's own opt-out list follows the keywords, whatever the webhook does.
      const word = m.body.trim().toUpperCase();
      if (OPT_OUT.includes(word) || opts.optOutType === "STOP") optedOut.add(m.from);
      if (OPT_IN.includes(word) || opts.optOutType === "START") optedOut.delete(m.from);
      const params: [string, string][] = [
        ["ToCountry", "US"],
        ["ToState", "CA"],
        ["SmsMessageSid", m.sid],
        ["NumMedia", String(media.length)],
        ["ToCity", "SAN FRANCISCO"],
        ["FromZip", "94105"],
        ["SmsSid", m.sid],
        ["FromState", "CA"],
        ["SmsStatus", "received"],
        ["FromCity", "SAN FRANCISCO"],
        ["Body", m.body],
        ["FromCountry", "US"],
        ["To", m.to],
        ["ToZip", "94105"],
        ["NumSegments", String(m.numSegments)],
        ["MessageSid", m.sid],
        ["AccountSid", accountSid],
        ["From", m.from],
        ["ApiVersion", "2010-04-01"],
      ];
      media.forEach((x, i) => {
        params.push([`MediaContentType${i}`, x.contentType]);
        params.push([`MediaUrl${i}`, `${origin}${account}/Messages/${m.sid}/Media/${x.sid}`]);
      });
      if (opts.optOutType) params.push(["OptOutType", opts.optOutType]);
      let answer: DeliveredAnswer | null = null;
      if (opts.deliver !== false && fake.incomingUrl) answer = await post(fake.incomingUrl, params);
      return { message: m, params, answer };
    },

    progress,
    callbackParams,
    post,
    sign,
    createRequests: () => requests.filter((r) => r.method === "POST" && r.path === `${account}/Messages.json`),
    async idle() {
      while (pending.size) await Promise.allSettled([...pending]);
    },
    async close() {
      for (const t of timers) clearTimeout(t);
      timers.clear();
      await fake.idle();
      await server.close();
    },
  };
  return fake;
}

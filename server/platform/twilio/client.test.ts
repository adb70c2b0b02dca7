import type http from "node:http";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type Loopback, listenLoopback, readBody, refusedUrl } from "../../../tests/fakes/http";
import { config, resetConfig } from "../../kernel/config";
import { createMessageForm, createTwilioClient, listMessagesParams, type TwilioClient } from "./client";
import { describeTwilioError, TwilioError } from "./errors";

// The Twilio client against a scripted local server: what it sends, and how each kind of answer
// (Twilio's error JSON, 429 with Retry-After, garbage, a hang, a redirect) comes back. The
// local server is the base URL and serves the media too: PROVIDER_MEDIA_FROM_BASE_URL is on.

const SID = `AC${"5".repeat(32)}`;
const TOKEN = "tok-3f9e2c1a7b";
const MSG = `SM${"a".repeat(32)}`;

interface Recorded {
  method: string;
  url: URL;
  headers: http.IncomingHttpHeaders;
  body: string;
}
type Handler = (req: Recorded, res: http.ServerResponse) => void;

let server: Loopback;
let origin: string;
let handler: Handler;
let requests: Recorded[];
let client: TwilioClient;

function send(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  res.writeHead(status, { "content-type": typeof body === "string" ? "text/html" : "application/json", ...headers });
  res.end(text);
}

const messageJson = (overrides: Record<string, unknown> = {}) => ({
  account_sid: SID,
  api_version: "2010-04-01",
  body: "hi",
  date_created: "Wed, 25 Nov 2026 06:30:15 +0000",
  date_sent: null,
  date_updated: "Wed, 25 Nov 2026 06:30:15 +0000",
  direction: "outbound-api",
  error_code: null,
  error_message: null,
  from: "+15017122661",
  messaging_service_sid: null,
  num_media: "0",
  num_segments: "2",
  price: null,
  price_unit: "USD",
  sid: MSG,
  status: "queued",
  subresource_uris: { media: `/2010-04-01/Accounts/${SID}/Messages/${MSG}/Media.json` },
  to: "+15558675310",
  uri: `/2010-04-01/Accounts/${SID}/Messages/${MSG}.json`,
  ...overrides,
});

async function failure(p: Promise<unknown>): Promise<TwilioError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(TwilioError);
    const e = err as TwilioError;
    for (const text of [e.message, describeTwilioError(e), e.twilioMessage ?? ""]) expect(text).not.toContain(TOKEN);
    return e;
  }
  throw new Error("expected a failure");
}

function mediaFromBaseUrl(on: boolean): void {
  process.env.PROVIDER_MEDIA_FROM_BASE_URL = String(on);
  resetConfig();
}

beforeAll(async () => {
  mediaFromBaseUrl(true);
  server = await listenLoopback(async (raw, res) => {
    const rec = { method: raw.method ?? "", url: new URL(raw.url ?? "/", "http://t"), headers: raw.headers, body: (await readBody(raw)).toString("utf8") };
    requests.push(rec);
    handler(rec, res);
  });
  origin = server.url;
});

afterAll(async () => {
  delete process.env.PROVIDER_MEDIA_FROM_BASE_URL;
  resetConfig();
  await server.close();
});

beforeEach(() => {
  requests = [];
  handler = (_req, res) => send(res, 500, { code: 20500, message: "no handler", status: 500 });
  client = createTwilioClient({ accountSid: SID, authToken: TOKEN, baseUrl: origin }, { timeoutMs: 2_000 });
});

describe("request builders", () => {
  it("create: enforces the document's x-twilio.conditional (From or MessagingServiceSid; Body or MediaUrl)", () => {
    expect(() => createMessageForm({ to: "+15558675310", body: "x" })).toThrow(/From and MessagingServiceSid/);
    expect(() => createMessageForm({ to: "+15558675310", from: "+1", messagingServiceSid: "MG1", body: "x" })).toThrow(/exactly one/);
    expect(() => createMessageForm({ to: "+15558675310", from: "+15017122661" })).toThrow(/Body or a MediaUrl/);
    expect(() => createMessageForm({ to: "+15558675310", from: "+15017122661", body: "", mediaUrls: [] })).toThrow(/Body or a MediaUrl/);
    expect(() => createMessageForm({ to: "", from: "+15017122661", body: "x" })).toThrow(/To/);
    expect(() => createMessageForm({ to: "+1", from: "+1", mediaUrls: Array(11).fill("https://x/y") })).toThrow(/10/);
    expect([...createMessageForm({ to: "+15558675310", messagingServiceSid: "MG1", mediaUrls: ["https://a/1", "https://a/2"], statusCallback: "https://cb/x?token=1" })]).toEqual([
      ["To", "+15558675310"],
      ["MessagingServiceSid", "MG1"],
      ["MediaUrl", "https://a/1"],
      ["MediaUrl", "https://a/2"],
      ["StatusCallback", "https://cb/x?token=1"],
    ]);
  });

  it("list: DateSent> as the day's midnight UTC, PageSize clamped", () => {
    const p = listMessagesParams({ to: "+1555", from: "+1666", sentSince: Date.UTC(2026, 10, 25, 23, 59, 59), pageSize: 5000 });
    expect(p.toString()).toBe("To=%2B1555&From=%2B1666&DateSent%3E=2026-11-25T00%3A00%3A00Z&PageSize=1000");
    expect(listMessagesParams({ pageSize: 0 }).get("PageSize")).toBe("1");
  });
});

describe("calls", () => {
  it("creates a message: Basic auth, a form body, the 201 parsed (RFC 2822 dates, string counts)", async () => {
    handler = (_req, res) => send(res, 201, messageJson());
    const m = await client.createMessage({ to: "+15558675310", from: "+15017122661", body: "hi & bye", statusCallback: "https://x/cb" }, 2_000);
    expect(m).toMatchObject({ sid: MSG, status: "queued", num_segments: 2, num_media: 0, date_created: Date.UTC(2026, 10, 25, 6, 30, 15), date_sent: null });
    const r = requests[0]!;
    expect(r.method).toBe("POST");
    expect(r.url.pathname).toBe(`/2010-04-01/Accounts/${SID}/Messages.json`);
    expect(r.headers.authorization).toBe(`Basic ${Buffer.from(`${SID}:${TOKEN}`).toString("base64")}`);
    expect(r.headers["content-type"]).toBe("application/x-www-form-urlencoded");
    expect(new URLSearchParams(r.body).get("Body")).toBe("hi & bye");
    expect(r.url.search).not.toContain(TOKEN);
  });

  it("Twilio's error JSON becomes its code and message; 429 carries Retry-After", async () => {
    handler = (_req, res) => send(res, 400, { code: 21211, message: "The 'To' number +1 is not a valid phone number.", more_info: "https://www.twilio.com/docs/errors/21211", status: 400 });
    const e = await failure(client.createMessage({ to: "+1", from: "+15017122661", body: "x" }, 2_000));
    expect(e).toMatchObject({ kind: "http", status: 400, code: 21211, twilioMessage: "The 'To' number +1 is not a valid phone number.", sentRequest: true });
    expect(describeTwilioError(e)).toBe("Twilio error 21211 the 'To' number is not a valid phone number (HTTP 400)");

    handler = (_req, res) => send(res, 429, { code: 20429, message: "Too Many Requests", status: 429 }, { "retry-after": "3" });
    expect(await failure(client.listMessages({}))).toMatchObject({ status: 429, code: 20429, retryAfterMs: 3000 });
  });

  it("a non-JSON answer, a wrong shape, a redirect and a 200 where 201 belongs are garbage", async () => {
    handler = (_req, res) => send(res, 201, "<html>proxy</html>");
    expect(await failure(client.createMessage({ to: "+1", from: "+2", body: "x" }, 2_000))).toMatchObject({ kind: "garbage", status: 201 });
    handler = (_req, res) => send(res, 201, { sid: 5 });
    expect((await failure(client.createMessage({ to: "+1", from: "+2", body: "x" }, 2_000))).message).toContain("sid");
    handler = (_req, res) => send(res, 302, "", { location: "https://elsewhere.example/" });
    expect(await failure(client.listMessages({}))).toMatchObject({ kind: "garbage", status: 302 });
    handler = (_req, res) => send(res, 200, messageJson());
    expect(await failure(client.createMessage({ to: "+1", from: "+2", body: "x" }, 2_000))).toMatchObject({ kind: "garbage", status: 200 });
  });

  it("a hang is a timeout (outcome unknown); a refused connection was never sent", async () => {
    handler = () => undefined; // never answers
    const e = await failure(client.createMessage({ to: "+1", from: "+2", body: "x" }, 300));
    expect(e).toMatchObject({ kind: "timeout", sentRequest: true });
    const closed = createTwilioClient({ accountSid: SID, authToken: TOKEN, baseUrl: await refusedUrl() });
    expect(await failure(closed.listMessages({}))).toMatchObject({ kind: "network", sentRequest: false, networkCode: "ECONNREFUSED" });
  });

  it("fetchMessage answers null for 404; next pages stay within the account's list", async () => {
    handler = (_req, res) => send(res, 404, { code: 20404, message: "The requested resource was not found", status: 404 });
    expect(await client.fetchMessage(MSG)).toBeNull();
    handler = (_req, res) => send(res, 200, { messages: [messageJson()], next_page_uri: null, page: 1, page_size: 1 });
    const page = await client.nextMessagePage(`/2010-04-01/Accounts/${SID}/Messages.json?PageSize=1&Page=1&PageToken=PA${MSG}`);
    expect(page.messages).toHaveLength(1);
    expect(requests.at(-1)!.url.searchParams.get("PageToken")).toBe(`PA${MSG}`);
    for (const uri of [`https://evil.example/2010-04-01/Accounts/${SID}/Messages.json`, `/2010-04-01/Accounts/AC${"0".repeat(32)}/Messages.json`, `/2010-04-01/Accounts/${SID}/Calls.json`]) {
      expect((await failure(client.nextMessagePage(uri))).kind).toBe("garbage");
    }
  });
});

describe("media downloads", () => {
  it("follows Twilio's redirect, sending the credentials only to the host that was asked, capped at maxBytes", async () => {
    const bytes = Buffer.alloc(5000, 7);
    // A second local origin stands for the media store Twilio redirects to.
    const store = await listenLoopback((req, res) => {
      requests.push({ method: req.method ?? "", url: new URL(req.url ?? "/", "http://store"), headers: req.headers, body: "" });
      res.writeHead(200, { "content-type": "image/png", "content-length": bytes.length });
      res.end(bytes);
    });
    const storeOrigin = store.url;
    try {
      const sameOrigin = createTwilioClient({ accountSid: SID, authToken: TOKEN, baseUrl: origin });
      // Same origin: a relative redirect keeps the credentials.
      handler = (req, res) => (req.url.pathname === "/cdn/1" ? send(res, 200, "hello", { "content-type": "image/jpeg" }) : send(res, 307, "", { location: "/cdn/1" }));
      const ok = await sameOrigin.downloadMedia(`${origin}/2010-04-01/Accounts/${SID}/Messages/${MSG}/Media/ME1`, { maxBytes: 100 });
      expect(new TextDecoder().decode(ok.content)).toBe("hello");
      expect(requests.map((r) => Boolean(r.headers.authorization))).toEqual([true, true]);

      // Another origin (http, so refused unless it is the base URL): the redirect is refused.
      requests = [];
      handler = (_req, res) => send(res, 307, "", { location: `${storeOrigin}/media/1` });
      const refused = await failure(sameOrigin.downloadMedia(`${origin}/2010-04-01/Accounts/${SID}/Messages/${MSG}/Media/ME1`, { maxBytes: 100_000 }));
      expect(refused.kind).toBe("refused");
      expect(requests).toHaveLength(1);

      // With the store as the base URL, a redirect from it to it is followed; credentials stay on the first origin.
      const viaStore = createTwilioClient({ accountSid: SID, authToken: TOKEN, baseUrl: storeOrigin });
      requests = [];
      const got = await viaStore.downloadMedia(`${storeOrigin}/media/1`, { maxBytes: 100_000 });
      expect(got).toMatchObject({ mimeType: "image/png" });
      expect(got.content.byteLength).toBe(5000);
      expect(requests[0]!.headers.authorization).toMatch(/^Basic /);
      expect((await failure(viaStore.downloadMedia(`${storeOrigin}/media/1`, { maxBytes: 100 }))).kind).toBe("too_large");
    } finally {
      await store.close();
    }
  });

  it("refuses URLs outside the base URL and Twilio's https hosts without a request", async () => {
    for (const url of ["http://169.254.169.254/latest/meta-data", "https://example.com/x.png", "http://api.twilio.com/2010-04-01/x", "file:///etc/passwd", "not a url"]) {
      const e = await failure(client.downloadMedia(url, { maxBytes: 1000 }));
      expect(e).toMatchObject({ kind: "refused", sentRequest: false });
    }
    expect(requests).toHaveLength(0);
  });

  it("fetches media on the base URL's own origin only with PROVIDER_MEDIA_FROM_BASE_URL, never for PROVIDER_ALLOW_PRIVATE alone", async () => {
    handler = (_req, res) => send(res, 200, "png", { "content-type": "image/png" });
    const url = `${origin}/2010-04-01/Accounts/${SID}/Messages/${MSG}/Media/ME1`;
    try {
      mediaFromBaseUrl(false);
      expect(config().providerAllowPrivate).toBe(true); // the LAN switch, on for every test
      const strict = createTwilioClient({ accountSid: SID, authToken: TOKEN, baseUrl: origin });
      const e = await failure(strict.downloadMedia(url, { maxBytes: 1000 }));
      expect(e).toMatchObject({ kind: "refused", sentRequest: false });
      expect(e.message).toContain("only Twilio's own https hosts are fetched");
      expect(requests).toHaveLength(0);
    } finally {
      mediaFromBaseUrl(true);
    }
    const double = createTwilioClient({ accountSid: SID, authToken: TOKEN, baseUrl: origin });
    expect((await double.downloadMedia(url, { maxBytes: 1000 })).mimeType).toBe("image/png");
  });

  it("refuses an answer that is not media (a JSON document, an HTML page, no type): nothing is returned to store", async () => {
    const url = `${origin}/2010-04-01/Accounts/${SID}/Messages/${MSG}/Media/ME1`;
    for (const type of ["application/json", "text/html", "text/plain", "application/octet-stream", null]) {
      handler = (_req, res) => {
        res.writeHead(200, type ? { "content-type": type } : {});
        res.end('{"AccessKeyId":"ASIA...","SecretAccessKey":"..."}');
      };
      const e = await failure(client.downloadMedia(url, { maxBytes: 1000 }));
      expect(e, String(type)).toMatchObject({ kind: "refused", status: 200 });
      expect(e.message).toContain("not media");
      expect(e.message).not.toContain("AccessKeyId");
    }
  });
});

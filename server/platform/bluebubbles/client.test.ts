import type http from "node:http";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ZodError } from "zod";
import { type Loopback, listenLoopback, readBody, refusedUrl } from "../../../tests/fakes/http";
import {
  BBChatSchema,
  BBMessageSchema,
  BBServerInfoSchema,
  BBWebhookEventSchema,
  BlueBubblesError,
  createBlueBubblesClient,
  describeBlueBubblesError,
  parseWebhookEvent,
  privateApiUsable,
  redactUrl,
  stripAssociatedPrefix,
  type BlueBubblesClient,
} from "./client";

// A scripted BlueBubbles stand-in: each test installs `handler`; every request is recorded.
// Response bodies mirror BlueBubbles Server 1.9.9 (responses/success.ts, errors.ts,
// serializers/MessageSerializer.ts).

const PASSWORD = "s3cr3t pw/&=+?ü";
const ENCODED_FORMS = [PASSWORD, encodeURIComponent(PASSWORD), new URLSearchParams({ p: PASSWORD }).toString().slice(2)];

interface Recorded {
  method: string;
  rawUrl: string;
  url: URL;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

type Handler = (req: Recorded, res: http.ServerResponse, raw: http.IncomingMessage) => void | Promise<void>;

let server: Loopback;
let origin: string;
let handler: Handler;
let requests: Recorded[];
let client: BlueBubblesClient;

function send(res: http.ServerResponse, status: number, body: unknown) {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

function ok(res: http.ServerResponse, message: string, data?: unknown, metadata?: unknown) {
  send(res, 200, { status: 200, message, ...(data !== undefined ? { data } : {}), ...(metadata !== undefined ? { metadata } : {}) });
}

function last(): Recorded {
  const r = requests.at(-1);
  if (!r) throw new Error("no request recorded");
  return r;
}

function json(r: Recorded): Record<string, unknown> {
  return JSON.parse(r.body.toString("utf8")) as Record<string, unknown>;
}

/** A full-shape message as MessageSerializer emits it for REST responses. */
function message(overrides: Record<string, unknown> = {}) {
  return {
    originalROWID: 4711,
    guid: "8E5B0C3F-1D2A-4C55-9F0B-2C5B4A1E9D10",
    text: "hi",
    attributedBody: null,
    handle: { originalROWID: 12, address: "+15551234567", service: "iMessage", uncanonicalizedId: null, country: "us" },
    handleId: 12,
    otherHandle: 0,
    attachments: [],
    subject: null,
    error: 0,
    dateCreated: 1763900000123,
    dateRead: null,
    dateDelivered: null,
    isDelivered: false,
    isFromMe: true,
    hasDdResults: false,
    isArchived: false,
    itemType: 0,
    groupTitle: null,
    groupActionType: 0,
    balloonBundleId: null,
    associatedMessageGuid: null,
    associatedMessageType: null,
    expressiveSendStyleId: null,
    threadOriginatorGuid: null,
    hasPayloadData: false,
    country: null,
    isDelayed: false,
    isAutoReply: false,
    isSystemMessage: false,
    isServiceMessage: false,
    isForward: false,
    threadOriginatorPart: null,
    isCorrupt: false,
    datePlayed: null,
    cacheRoomnames: null,
    isSpam: false,
    isExpired: false,
    timeExpressiveSendPlayed: null,
    isAudioMessage: false,
    replyToGuid: null,
    shareStatus: 0,
    shareDirection: 0,
    wasDeliveredQuietly: false,
    didNotifyRecipient: false,
    chats: [],
    messageSummaryInfo: null,
    payloadData: null,
    dateEdited: null,
    dateRetracted: null,
    partCount: 1,
    ...overrides,
  };
}

/** The notification shape (webhooks): no isAudioMessage, replyToGuid, threadOriginatorPart, … */
function notificationMessage(overrides: Record<string, unknown> = {}) {
  return {
    originalROWID: 4712,
    guid: "C0FFEE00-0000-4000-8000-000000000001",
    text: "hello",
    attributedBody: null,
    handle: { originalROWID: 12, address: "+15551234567", service: "iMessage" },
    handleId: 12,
    otherHandle: 0,
    attachments: [],
    subject: null,
    error: 0,
    dateCreated: 1763900001000,
    dateRead: null,
    dateDelivered: null,
    isDelivered: true,
    isFromMe: false,
    hasDdResults: false,
    isArchived: false,
    itemType: 0,
    groupTitle: null,
    groupActionType: 0,
    balloonBundleId: null,
    associatedMessageGuid: null,
    associatedMessageType: null,
    expressiveSendStyleId: null,
    threadOriginatorGuid: null,
    hasPayloadData: false,
    chats: [
      {
        originalROWID: 3,
        guid: "iMessage;-;+15551234567",
        style: 45,
        chatIdentifier: "+15551234567",
        isArchived: false,
        displayName: "",
      },
    ],
    messageSummaryInfo: null,
    payloadData: null,
    ...overrides,
  };
}

async function pump(res: http.ServerResponse, chunk: Buffer, limit: number): Promise<number> {
  // Writes `chunk` until `limit` bytes or the client goes away; returns the bytes handed to the socket.
  let written = 0;
  let closed = false;
  res.on("close", () => (closed = true));
  while (!closed && written < limit) {
    const more = res.write(chunk);
    written += chunk.length;
    if (!more) {
      await new Promise<void>((resolve) => {
        const done = () => {
          res.off("drain", done);
          res.off("close", done);
          resolve();
        };
        res.on("drain", done);
        res.on("close", done);
      });
    }
  }
  if (!closed) res.end();
  return written;
}

async function failure(promise: Promise<unknown>): Promise<BlueBubblesError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(BlueBubblesError);
    const e = err as BlueBubblesError;
    for (const text of [e.message, String(e), e.stack ?? "", describeBlueBubblesError(e), e.errorMessage ?? "", e.envelopeMessage ?? ""]) {
      for (const secret of ENCODED_FORMS) expect(text).not.toContain(secret);
    }
    return e;
  }
  throw new Error("expected the call to fail");
}

beforeAll(async () => {
  server = await listenLoopback(async (raw, res) => {
    const rec: Recorded = {
      method: raw.method ?? "",
      rawUrl: raw.url ?? "",
      url: new URL(raw.url ?? "/", "http://bb.test"),
      headers: raw.headers,
      body: await readBody(raw),
    };
    requests.push(rec);
    // authMiddleware: guid ?? password ?? token from the query only.
    if (rec.url.searchParams.get("password") !== PASSWORD) {
      send(res, 401, {
        status: 401,
        message: "You are not authorized to access this resource",
        error: { type: "Authentication Error", message: "Unauthorized" },
      });
      return;
    }
    await handler(rec, res, raw);
  });
  origin = server.url;
});

afterAll(() => server.close());

beforeEach(() => {
  requests = [];
  handler = (_req, res) => send(res, 500, { status: 500, message: "no handler" });
  client = createBlueBubblesClient({ url: `${origin}/`, password: PASSWORD });
});

describe("auth and URLs", () => {
  it("sends the password only as a query parameter, strips trailing slashes and keeps a path prefix", async () => {
    handler = (_req, res) => ok(res, "Ping received!", "pong");
    await client.ping();
    const r = last();
    expect(r.method).toBe("GET");
    expect(r.url.pathname).toBe("/api/v1/ping");
    expect(r.url.searchParams.get("password")).toBe(PASSWORD);
    for (const [name, value] of Object.entries(r.headers)) {
      for (const secret of ENCODED_FORMS) expect(`${name}: ${String(value)}`).not.toContain(secret);
    }
    expect(r.headers.authorization).toBeUndefined();

    const prefixed = createBlueBubblesClient({ url: `${origin}/bb//`, password: PASSWORD });
    handler = (_req, res) => send(res, 404, { status: 404, message: "Not Found" });
    await failure(prefixed.ping());
    expect(last().url.pathname).toBe("/bb/api/v1/ping");
  });

  it("a wrong password is an http 401 whose message does not contain the password", async () => {
    const bad = createBlueBubblesClient({ url: origin, password: `${PASSWORD}-wrong` });
    const e = await failure(bad.ping());
    expect(e.kind).toBe("http");
    expect(e.status).toBe(401);
    expect(e.errorType).toBe("Authentication Error");
    expect(e.message).not.toContain("-wrong");
  });

  it("redactUrl hides password, guid and token values", () => {
    expect(redactUrl("http://h:1/api/v1/ping?password=abc&x=1")).toBe("http://h:1/api/v1/ping?password=***&x=1");
    expect(redactUrl("http://h/a?guid=g&token=t#frag")).toBe("http://h/a?guid=***&token=***#frag");
    expect(redactUrl("http://h/a?x=1")).toBe("http://h/a?x=1");
  });

  it("scrubs the password from errors raised by a custom fetch", async () => {
    const c = createBlueBubblesClient(
      { url: origin, password: PASSWORD },
      {
        fetch: async (input) => {
          throw new TypeError(`Failed to parse URL from ${String(input)}`);
        },
      },
    );
    const e = await failure(c.ping());
    expect(e.kind).toBe("network");
    expect(e.sentRequest).toBe(true);
  });
});

describe("sends", () => {
  it("sendText posts JSON and parses the echoed tempGuid", async () => {
    handler = (req, res) => ok(res, "Message sent!", message({ tempGuid: json(req).tempGuid, text: json(req).message }));
    const sent = await client.sendText(
      { chatGuid: "iMessage;-;+15551234567", tempGuid: "temp-1", message: "hi there", method: "private-api", selectedMessageGuid: "ABC", partIndex: 0 },
      5_000,
    );
    expect(sent.tempGuid).toBe("temp-1");
    expect(sent.text).toBe("hi there");
    expect(sent.isFromMe).toBe(true);
    expect(sent.handle?.address).toBe("+15551234567");
    const r = last();
    expect(r.method).toBe("POST");
    expect(r.url.pathname).toBe("/api/v1/message/text");
    expect(r.headers["content-type"]).toContain("application/json");
    expect(json(r)).toEqual({
      chatGuid: "iMessage;-;+15551234567",
      tempGuid: "temp-1",
      message: "hi there",
      method: "private-api",
      selectedMessageGuid: "ABC",
      partIndex: 0,
    });
  });

  it("sendAttachment sends multipart with the exact field names and bytes", async () => {
    const bytes = new Uint8Array(70_000);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 31 + 7) % 256;
    const received: { form: FormData | null } = { form: null };
    handler = async (req, res) => {
      received.form = await new Response(new Uint8Array(req.body), { headers: { "content-type": String(req.headers["content-type"]) } }).formData();
      ok(res, "Attachment sent!", message({ text: "", attachments: [{ originalROWID: 9, guid: "at_1", uti: "public.png", mimeType: "image/png", transferName: "pic.png", totalBytes: bytes.length }] }));
    };
    const sent = await client.sendAttachment(
      { chatGuid: "iMessage;-;+15551234567", tempGuid: "temp-2", name: "pic.png", mimeType: "image/png", bytes, method: "private-api", isAudioMessage: true, partIndex: 0 },
      5_000,
    );
    expect(sent.text).toBe("");
    expect(sent.tempGuid).toBeUndefined();
    expect(sent.attachments[0]?.transferName).toBe("pic.png");
    expect(last().url.pathname).toBe("/api/v1/message/attachment");
    expect(String(last().headers["content-type"])).toMatch(/^multipart\/form-data; boundary=/);
    const f = received.form;
    if (!f) throw new Error("the server received no form");
    expect([...f.keys()].sort()).toEqual(["attachment", "chatGuid", "isAudioMessage", "method", "name", "partIndex", "tempGuid"]);
    expect(f.get("chatGuid")).toBe("iMessage;-;+15551234567");
    expect(f.get("tempGuid")).toBe("temp-2");
    expect(f.get("name")).toBe("pic.png");
    expect(f.get("method")).toBe("private-api");
    expect(f.get("isAudioMessage")).toBe("true");
    expect(f.get("partIndex")).toBe("0");
    const file = f.get("attachment") as File;
    expect(file.name).toBe("pic.png");
    expect(file.type).toBe("image/png");
    expect(new Uint8Array(await file.arrayBuffer())).toEqual(bytes);
  });

  it("omits isAudioMessage when false", async () => {
    let keys: string[] = [];
    handler = async (req, res) => {
      const f = await new Response(new Uint8Array(req.body), { headers: { "content-type": String(req.headers["content-type"]) } }).formData();
      keys = [...f.keys()];
      ok(res, "Attachment sent!", message());
    };
    await client.sendAttachment(
      { chatGuid: "c", tempGuid: "t", name: "a.txt", mimeType: "text/plain", bytes: new Uint8Array([1]), method: "apple-script" },
      5_000,
    );
    expect(keys).not.toContain("isAudioMessage");
  });

  it("500 iMessage Error with a Message whose error is 22 surfaces dataError 22", async () => {
    handler = (_req, res) =>
      send(res, 500, {
        status: 500,
        message: "Message Send Error",
        error: { type: "iMessage Error", message: "Failed to send message! See attached message error code." },
        data: message({ error: 22, tempGuid: undefined }),
      });
    const e = await failure(client.sendText({ chatGuid: "iMessage;-;+15550000000", tempGuid: "t", message: "x", method: "apple-script" }, 5_000));
    expect(e.kind).toBe("http");
    expect(e.status).toBe(500);
    expect(e.errorType).toBe("iMessage Error");
    expect(e.errorMessage).toBe("Failed to send message! See attached message error code.");
    expect(e.envelopeMessage).toBe("Message Send Error");
    expect(e.dataError).toBe(22);
    expect(BBMessageSchema.parse(e.data).error).toBe(22);
    expect(e.sentRequest).toBe(true);
    expect(describeBlueBubblesError(e)).toContain("22");
  });

  it("500 iMessage Error with data null (match timeout)", async () => {
    handler = (_req, res) =>
      send(res, 500, {
        status: 500,
        message: "Message Send Error",
        error: { type: "iMessage Error", message: "Failed to send message! See attached message error code." },
        data: null,
      });
    const e = await failure(client.sendText({ chatGuid: "c", tempGuid: "t", message: "x", method: "apple-script" }, 5_000));
    expect(e.kind).toBe("http");
    expect(e.dataError).toBeNull();
    expect(e.data).toBeNull();
    expect(describeBlueBubblesError(e)).toContain("may still have been sent");
  });

  it("accepts the documented error.error as well as error.message", async () => {
    handler = (_req, res) =>
      send(res, 400, { status: 400, message: "Bad Request", error: { type: "Validation Error", error: "The chat guid field is required." } });
    const e = await failure(client.sendText({ chatGuid: "", tempGuid: "t", message: "x", method: "apple-script" }, 5_000));
    expect(e.status).toBe(400);
    expect(e.errorType).toBe("Validation Error");
    expect(e.errorMessage).toBe("The chat guid field is required.");
  });

  it("scrubs a password echoed by the server", async () => {
    handler = (_req, res) =>
      send(res, 500, { status: 500, message: `echo ${PASSWORD}`, error: { type: "Server Error", message: `bad ${encodeURIComponent(PASSWORD)}` } });
    const e = await failure(client.ping());
    expect(e.envelopeMessage).toBe("echo ***");
    expect(e.errorMessage).toBe("bad ***");
  });

  it("newChat returns the chat with participants and the sent message", async () => {
    handler = (req, res) =>
      ok(res, "Successfully created chat!", {
        originalROWID: 3,
        guid: "iMessage;-;+15551234567",
        style: 45,
        chatIdentifier: "+15551234567",
        isArchived: false,
        displayName: "",
        participants: [{ originalROWID: 12, address: "+15551234567", service: "iMessage", uncanonicalizedId: null, country: "us" }],
        messages: [message({ chats: undefined, tempGuid: json(req).tempGuid })],
        isFiltered: false,
        groupId: "G",
        properties: null,
        lastAddressedHandle: null,
      });
    const chat = await client.newChat({ addresses: ["+15551234567"], message: "hi", tempGuid: "t-9", method: "private-api", service: "iMessage" }, 5_000);
    expect(chat.guid).toBe("iMessage;-;+15551234567");
    expect(chat.participants?.[0]?.address).toBe("+15551234567");
    expect(chat.messages?.[0]?.tempGuid).toBe("t-9");
    expect(last().url.pathname).toBe("/api/v1/chat/new");
    expect(json(last())).toEqual({ addresses: ["+15551234567"], message: "hi", tempGuid: "t-9", method: "private-api", service: "iMessage" });
    expect(BBChatSchema.safeParse({ guid: 1 }).success).toBe(false);
  });

  it("react posts the reaction and returns the reaction message", async () => {
    handler = (_req, res) =>
      ok(res, "Reaction sent!", message({ text: "Loved “hi”", associatedMessageGuid: "p:0/ABC", associatedMessageType: "love" }));
    const m = await client.react({ chatGuid: "c", selectedMessageGuid: "ABC", reaction: "love", partIndex: 0 }, 5_000);
    expect(m.associatedMessageType).toBe("love");
    expect(stripAssociatedPrefix(m.associatedMessageGuid ?? "")).toBe("ABC");
    expect(last().url.pathname).toBe("/api/v1/message/react");
    expect(json(last())).toEqual({ chatGuid: "c", selectedMessageGuid: "ABC", reaction: "love", partIndex: 0 });
  });
});

describe("garbage and limits", () => {
  it("HTML with HTTP 200 is garbage with a short excerpt", async () => {
    handler = (_req, res) => {
      res.writeHead(200, { "content-type": "text/html" });
      res.end(`<html><head><title>Cloudflare</title></head><body>${"x".repeat(5000)}</body></html>`);
    };
    const e = await failure(client.serverInfo());
    expect(e.kind).toBe("garbage");
    expect(e.status).toBe(200);
    expect(e.message).toContain("not JSON");
    expect(e.message).toContain("<html>");
    expect(e.message.length).toBeLessThan(400);
  });

  it("HTML with HTTP 502 is garbage too", async () => {
    handler = (_req, res) => {
      res.writeHead(502, { "content-type": "text/html" });
      res.end("<html>Bad gateway</html>");
    };
    const e = await failure(client.ping());
    expect(e.kind).toBe("garbage");
    expect(e.status).toBe(502);
  });

  it("a 200 whose envelope says 500 is an error, not a success", async () => {
    handler = (_req, res) =>
      send(res, 200, { status: 500, message: "Message Send Error", error: { type: "iMessage Error", message: "Failed" }, data: null });
    const e = await failure(client.sendText({ chatGuid: "c", tempGuid: "t", message: "x", method: "apple-script" }, 5_000));
    expect(e.kind).toBe("garbage");
    expect(e.errorType).toBe("iMessage Error");
    expect(e.envelopeMessage).toBe("Message Send Error");
  });

  it("JSON that is not an envelope, or data of the wrong shape, is garbage", async () => {
    handler = (_req, res) => send(res, 200, [1, 2, 3]);
    expect((await failure(client.ping())).kind).toBe("garbage");

    handler = (_req, res) => ok(res, "Message sent!", { ...message(), guid: undefined });
    const e = await failure(client.sendText({ chatGuid: "c", tempGuid: "t", message: "x", method: "apple-script" }, 5_000));
    expect(e.kind).toBe("garbage");
    expect(e.message).toContain("guid");
  });

  it("a 50 MB chunked body is garbage after reading about maxJsonBytes", async () => {
    const cap = 256 * 1024;
    let written = 0;
    let finished!: () => void;
    const serverDone = new Promise<void>((resolve) => (finished = resolve));
    handler = async (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write('{"status":200,"message":"x","data":"');
      written = await pump(res, Buffer.alloc(64 * 1024, 0x61), 50 * 1024 * 1024);
      finished();
    };
    const small = createBlueBubblesClient({ url: origin, password: PASSWORD }, { maxJsonBytes: cap });
    const e = await failure(small.queryMessages({}));
    expect(e.kind).toBe("garbage");
    expect(e.message).toContain(`larger than ${cap} bytes`);
    await serverDone;
    // The client dropped the connection: the server could only fill socket buffers, not 50 MB.
    expect(written).toBeLessThan(16 * 1024 * 1024);
  });

  it("a declared Content-Length over the cap fails before reading", async () => {
    handler = (_req, res) => {
      res.writeHead(200, { "content-type": "application/json", "content-length": String(50 * 1024 * 1024) });
      res.write('{"status":200');
    };
    const small = createBlueBubblesClient({ url: origin, password: PASSWORD }, { maxJsonBytes: 1024 });
    const e = await failure(small.serverInfo());
    expect(e.kind).toBe("garbage");
    expect(e.message).toContain("larger than 1024 bytes");
  });

  it("timeout → kind timeout (outcome unknown)", async () => {
    handler = () => {
      /* never answers */
    };
    const started = Date.now();
    const e = await failure(client.sendText({ chatGuid: "c", tempGuid: "t", message: "x", method: "apple-script" }, 300));
    expect(e.kind).toBe("timeout");
    expect(e.sentRequest).toBe(true);
    expect(Date.now() - started).toBeLessThan(5_000);

    const quick = createBlueBubblesClient({ url: origin, password: PASSWORD }, { timeoutMs: 200 });
    expect((await failure(quick.ping())).kind).toBe("timeout");
  });

  it("a body that stalls after the headers also times out", async () => {
    handler = (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write('{"status":200,');
    };
    const quick = createBlueBubblesClient({ url: origin, password: PASSWORD }, { timeoutMs: 300 });
    const e = await failure(quick.ping());
    expect(e.kind).toBe("timeout");
  });

  it("connection refused → network with sentRequest false", async () => {
    const c = createBlueBubblesClient({ url: await refusedUrl(), password: PASSWORD });
    const e = await failure(c.sendText({ chatGuid: "c", tempGuid: "t", message: "x", method: "apple-script" }, 5_000));
    expect(e.kind).toBe("network");
    expect(e.sentRequest).toBe(false);
    expect(e.code).toBe("ECONNREFUSED");
    expect(describeBlueBubblesError(e)).toContain("could not reach");
  });

  it("a DNS failure (ENOTFOUND at err.cause.code) → sentRequest false", async () => {
    const c = createBlueBubblesClient(
      { url: "http://mac.invalid:1234", password: PASSWORD },
      {
        fetch: async () => {
          throw new TypeError("fetch failed", { cause: Object.assign(new Error("getaddrinfo ENOTFOUND mac.invalid"), { code: "ENOTFOUND" }) });
        },
      },
    );
    const e = await failure(c.ping());
    expect(e.kind).toBe("network");
    expect(e.sentRequest).toBe(false);
    expect(e.code).toBe("ENOTFOUND");
  });

  it("a connection dropped mid-request → network with sentRequest true", async () => {
    handler = (_req, _res, raw) => {
      raw.socket.destroy();
    };
    const e = await failure(client.sendText({ chatGuid: "c", tempGuid: "t", message: "x", method: "apple-script" }, 5_000));
    expect(e.kind).toBe("network");
    expect(e.sentRequest).toBe(true);
  });
});

describe("reads", () => {
  it("serverInfo parses the metadata", async () => {
    handler = (_req, res) =>
      ok(res, "Success", {
        computer_id: "ABC",
        os_version: "15.5",
        server_version: "1.9.9",
        private_api: true,
        proxy_service: "Cloudflare",
        helper_connected: true,
        detected_icloud: "me@icloud.com",
        detected_imessage: "me@icloud.com",
        macos_time_sync: null,
        local_ipv4s: ["192.168.1.2"],
        local_ipv6s: [],
      });
    const info = await client.serverInfo();
    expect(info.server_version).toBe("1.9.9");
    expect(privateApiUsable(info)).toBe(true);
    expect(last().url.pathname).toBe("/api/v1/server/info");
    expect(privateApiUsable(BBServerInfoSchema.parse({ private_api: true, helper_connected: false }))).toBe(false);
  });

  it("queryMessages sends after as a JSON number, with as an array and sort ASC", async () => {
    handler = (_req, res) =>
      ok(res, "Successfully fetched messages!", [message(), message({ guid: "G2", isFromMe: false })], { offset: 0, limit: 1000, total: 2, count: 2 });
    const result = await client.queryMessages({
      chatGuid: "iMessage;-;+15551234567",
      after: 1763900000000,
      sort: "ASC",
      limit: 1000,
      with: ["chat", "attachment"],
    });
    expect(result.total).toBe(2);
    expect(result.messages.map((m) => m.guid)).toEqual(["8E5B0C3F-1D2A-4C55-9F0B-2C5B4A1E9D10", "G2"]);
    const r = last();
    expect(r.method).toBe("POST");
    expect(r.url.pathname).toBe("/api/v1/message/query");
    const body = json(r);
    expect(body).toEqual({ chatGuid: "iMessage;-;+15551234567", after: 1763900000000, sort: "ASC", limit: 1000, with: ["chat", "attachment"] });
    expect(typeof body.after).toBe("number");
    expect(Array.isArray(body.with)).toBe(true);
  });

  it("queryMessages: the plain-text 404 for an unknown chatGuid is an http 404", async () => {
    handler = (_req, res) => {
      res.writeHead(404, { "content-type": "text/plain; charset=utf-8" });
      res.end("Not Found");
    };
    const e = await failure(client.queryMessages({ chatGuid: "iMessage;-;+10000000000" }));
    expect(e.kind).toBe("http");
    expect(e.status).toBe(404);
    expect(e.envelopeMessage).toBe("Not Found");
  });

  it("getMessage returns the message, or null on 404", async () => {
    handler = (_req, res) => ok(res, "Success", message({ guid: "G/1" }));
    expect((await client.getMessage("G/1"))?.guid).toBe("G/1");
    expect(last().rawUrl.startsWith("/api/v1/message/G%2F1?")).toBe(true);
    expect(last().url.searchParams.get("with")).toBe("chats,attachments");

    handler = (_req, res) =>
      send(res, 404, { status: 404, message: "The requested resource was not found", error: { type: "Database Error", message: "Message does not exist!" } });
    expect(await client.getMessage("nope")).toBeNull();

    handler = (_req, res) => send(res, 500, { status: 500, message: "An unhandled error has occurred!", error: { type: "Server Error", message: "boom" } });
    expect((await failure(client.getMessage("x"))).status).toBe(500);
  });

  it("typing and read URL-encode the chat GUID in the path", async () => {
    handler = (_req, res) => ok(res, "Successfully started typing!");
    await client.startTyping("iMessage;-;+15551234567");
    expect(last().method).toBe("POST");
    expect(last().rawUrl.split("?")[0]).toBe("/api/v1/chat/iMessage%3B-%3B%2B15551234567/typing");
    await client.stopTyping("iMessage;-;+15551234567");
    expect(last().method).toBe("DELETE");
    expect(last().rawUrl.split("?")[0]).toBe("/api/v1/chat/iMessage%3B-%3B%2B15551234567/typing");
    await client.markRead("iMessage;+;chat123");
    expect(last().method).toBe("POST");
    expect(last().rawUrl.split("?")[0]).toBe("/api/v1/chat/iMessage%3B%2B%3Bchat123/read");

    handler = (_req, res) =>
      send(res, 500, {
        status: 500,
        message: "Please make sure you have completed the setup for the Private API, and your helper is connected!",
        error: { type: "iMessage Error", message: "iMessage Private API Helper is not connected!" },
      });
    const e = await failure(client.startTyping("c"));
    expect(e.errorType).toBe("iMessage Error");
    expect(e.data).toBeUndefined();
  });

  it("iMessageAvailable reads data.available", async () => {
    handler = (_req, res) => ok(res, "Success", { available: true });
    expect(await client.iMessageAvailable("+1 555 123 4567")).toBe(true);
    expect(last().url.pathname).toBe("/api/v1/handle/availability/imessage");
    expect(last().url.searchParams.get("address")).toBe("+1 555 123 4567");
    handler = (_req, res) => ok(res, "Success", { available: false });
    expect(await client.iMessageAvailable("x@example.com")).toBe(false);
  });

  it("downloadAttachment streams the original bytes", async () => {
    const bytes = Buffer.from(Array.from({ length: 3000 }, (_, i) => i % 256));
    handler = (_req, res) => {
      res.writeHead(200, { "content-type": "image/heic" });
      res.end(bytes);
    };
    const got = await client.downloadAttachment("at_1/x", { maxBytes: 10_000 });
    expect(Buffer.from(got.content).equals(bytes)).toBe(true);
    expect(got.mimeType).toBe("image/heic");
    expect(last().rawUrl.split("?")[0]).toBe("/api/v1/attachment/at_1%2Fx/download");
    expect(last().url.searchParams.get("original")).toBe("true");
  });

  it("downloadAttachment stops at maxBytes (too_large)", async () => {
    let written = 0;
    let finished!: () => void;
    const serverDone = new Promise<void>((resolve) => (finished = resolve));
    handler = async (_req, res) => {
      res.writeHead(200, { "content-type": "video/quicktime" });
      written = await pump(res, Buffer.alloc(64 * 1024, 1), 50 * 1024 * 1024);
      finished();
    };
    const e = await failure(client.downloadAttachment("big", { maxBytes: 100_000 }));
    expect(e.kind).toBe("too_large");
    await serverDone;
    expect(written).toBeLessThan(16 * 1024 * 1024);

    handler = (_req, res) => {
      res.writeHead(200, { "content-type": "video/quicktime", "content-length": "5000000" });
      res.write(Buffer.alloc(1000));
    };
    expect((await failure(client.downloadAttachment("big", { maxBytes: 100_000 }))).kind).toBe("too_large");
  });

  it("downloadAttachment surfaces error envelopes", async () => {
    handler = (_req, res) =>
      send(res, 500, { status: 500, message: "The server has encountered an error", error: { type: "Server Error", message: "Attachment does not exist in disk!" } });
    const e = await failure(client.downloadAttachment("missing", { maxBytes: 1000 }));
    expect(e.kind).toBe("http");
    expect(e.status).toBe(500);
    expect(e.errorMessage).toBe("Attachment does not exist in disk!");
  });
});

describe("webhooks", () => {
  it("add, list and delete", async () => {
    const row = { id: 7, url: "https://relay.example/bb?token=abc", events: ["new-message", "updated-message"], created: "2026-11-23T10:00:00.000Z" };
    handler = (_req, res) => ok(res, "Successfully created webhook!", row);
    const added = await client.addWebhook(row.url, row.events);
    expect(added).toEqual(row);
    expect(last().method).toBe("POST");
    expect(last().url.pathname).toBe("/api/v1/webhook");
    expect(json(last())).toEqual({ url: row.url, events: row.events });

    handler = (_req, res) => ok(res, "Successfully fetched webhooks!", [row, { ...row, id: 8, url: "http://other" }]);
    const list = await client.listWebhooks();
    expect(list.map((w) => w.id)).toEqual([7, 8]);
    expect(last().method).toBe("GET");
    expect(last().url.pathname).toBe("/api/v1/webhook");

    handler = (_req, res) => ok(res, "Successfully deleted webhook!");
    await client.deleteWebhook(7);
    expect(last().method).toBe("DELETE");
    expect(last().url.pathname).toBe("/api/v1/webhook/7");

    handler = (_req, res) =>
      send(res, 404, { status: 404, message: "The requested resource was not found", error: { type: "Database Error", message: "Webhook does not exist!" } });
    const e = await failure(client.deleteWebhook(99));
    expect(e.kind).toBe("http");
    expect(e.status).toBe(404);

    handler = (_req, res) =>
      send(res, 400, {
        status: 400,
        message: "You've made a bad request! Please check your request params & body",
        error: { type: "Validation Error", message: "Invalid webhook event: message! Webhook must be one of: *,new-message" },
      });
    expect((await failure(client.addWebhook("https://x", ["message"]))).errorType).toBe("Validation Error");
  });
});

describe("parseWebhookEvent", () => {
  it("new-message (with chats and tempGuid)", () => {
    const ev = parseWebhookEvent({ type: "new-message", data: notificationMessage({ tempGuid: "temp-1", isFromMe: true }) });
    expect(ev.type).toBe("new-message");
    if (ev.type !== "new-message") throw new Error("unreachable");
    expect(ev.data.tempGuid).toBe("temp-1");
    expect(ev.data.chats?.[0]?.guid).toBe("iMessage;-;+15551234567");
    expect(ev.data.isAudioMessage).toBeUndefined();
  });

  it("updated-message without chats", () => {
    const data = notificationMessage({ dateRead: 1763900005000 });
    delete (data as { chats?: unknown }).chats;
    const ev = parseWebhookEvent({ type: "updated-message", data });
    if (ev.type !== "updated-message") throw new Error(`unexpected ${ev.type}`);
    expect(ev.data.chats).toBeUndefined();
    expect(ev.data.dateRead).toBe(1763900005000);
  });

  it("message-send-error carries the Message with its error code", () => {
    const ev = parseWebhookEvent({ type: "message-send-error", data: notificationMessage({ error: 22, isFromMe: true, tempGuid: "t" }) });
    if (ev.type !== "message-send-error") throw new Error(`unexpected ${ev.type}`);
    expect(ev.data.error).toBe(22);
  });

  it("a reaction with a p:0/ prefix", () => {
    const ev = parseWebhookEvent({
      type: "new-message",
      data: notificationMessage({ text: "Loved “hi”", associatedMessageGuid: "p:0/8E5B0C3F-1D2A", associatedMessageType: "love" }),
    });
    if (ev.type !== "new-message") throw new Error(`unexpected ${ev.type}`);
    expect(ev.data.associatedMessageType).toBe("love");
    expect(stripAssociatedPrefix(ev.data.associatedMessageGuid ?? "")).toBe("8E5B0C3F-1D2A");
    expect(stripAssociatedPrefix("bp:XYZ")).toBe("XYZ");
    expect(stripAssociatedPrefix("XYZ")).toBe("XYZ");
    const removal = parseWebhookEvent({ type: "new-message", data: notificationMessage({ associatedMessageType: "-love" }) });
    if (removal.type !== "new-message") throw new Error("unreachable");
    expect(removal.data.associatedMessageType).toBe("-love");
  });

  it("typing-indicator", () => {
    expect(parseWebhookEvent({ type: "typing-indicator", data: { display: true, guid: "iMessage;-;+15551234567" } })).toEqual({
      type: "typing-indicator",
      data: { display: true, guid: "iMessage;-;+15551234567" },
    });
  });

  it("chat-read-status-changed", () => {
    expect(parseWebhookEvent({ type: "chat-read-status-changed", data: { chatGuid: "iMessage;-;+1", read: true } })).toEqual({
      type: "chat-read-status-changed",
      data: { chatGuid: "iMessage;-;+1", read: true },
    });
  });

  it("other events pass through by name", () => {
    const ev = parseWebhookEvent({ type: "group-name-change", data: notificationMessage({ itemType: 2, groupTitle: "Team" }) });
    expect(ev.type).toBe("other");
    if (ev.type !== "other") throw new Error("unreachable");
    expect(ev.name).toBe("group-name-change");
    expect(parseWebhookEvent({ type: "hello-world", data: null })).toEqual({ type: "other", name: "hello-world", data: null });
  });

  it("garbage throws a ZodError", () => {
    expect(() => parseWebhookEvent("nope")).toThrow(ZodError);
    expect(() => parseWebhookEvent({ data: {} })).toThrow(ZodError);
    expect(() => parseWebhookEvent({ type: "new-message", data: { text: "no guid" } })).toThrow(ZodError);
    expect(() => parseWebhookEvent({ type: "typing-indicator", data: { display: "yes" } })).toThrow(ZodError);
    expect(BBWebhookEventSchema.safeParse({ type: "x", data: 1 }).success).toBe(true);
  });
});

// Twilio-shaped webhooks for npm run bench (bench/run.ts calls measureTwilio against a running
// `npm start`): form-encoded POSTs to /api/inbound/<line_id>, each signed with
// X-Twilio-Signature as Twilio signs (so every request pays the signature check), a mix of
// inbound messages and status callbacks (`sent` and `delivered` for messages the line sent,
// in either order), a fifth of them redeliveries. Measured end to end: every inbound message
// stored once and delivered once to a message.received webhook, every sent message ending
// `delivered` with one message.delivered: 0 lost, 0 duplicated.
//
// The line is a real Twilio line, connected through the operator CLI to a stub of Twilio's
// API in this process (loopback) that answers the probe and catch-up. The messages whose
// callbacks are sent are seeded in the database as the outbox records a sent message (an SM
// SID, `delivery_status: sent`): sending thousands through the line's paced outbox would
// measure the pacing, not the callbacks. The load comes from the separate generator process
// of bench/generator.ts.
import { createHmac, randomBytes } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import pg from "pg";
import { type GeneratedRequest, generate, prng, tableStats } from "./generator";
import { cpuSeconds, run, type ServerTarget } from "./load";

export interface TwilioResults {
  /** Distinct events in the requests sent: inbound messages and status callbacks. */
  inbound: number;
  callbacks: number;
  requests: number;
  stoppedEarly: boolean;
  failures: Record<string, number>;
  requestSeconds: number;
  requestsPerSecond: number;
  p50: number;
  p99: number;
  /** Distinct events taken in per second, from the first request to the last one recorded. */
  eventsPerSecond: number;
  /** ... and to the last webhook (message.received, message.delivered) arriving at the receiver. */
  deliveredPerSecond: number;
  lostInbound: number;
  duplicatedInbound: number;
  /** Sent messages whose delivered callback was sent but which are not `delivered`. */
  lostStatuses: number;
  /** Webhook deliveries beyond one per message and event. */
  duplicatedEvents: number;
  undelivered: number;
  cpuMsPerRequest: number;
  perRequest: { idxScans: number; inserted: number; updated: number } | null;
}

interface Target extends ServerTarget {
  /** Distinct events in the request list (count/4 repeats are added). */
  count: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const LINE_HANDLE = "+15550009200";
const ACCOUNT_SID = `AC${"b".repeat(32)}`;
const AUTH_TOKEN = randomBytes(16).toString("hex");
const SENDERS = 50;
const sid = () => `SM${randomBytes(16).toString("hex")}`;

/** X-Twilio-Signature as Twilio computes it (written here from Twilio's documentation, independently of the adapter). */
function sign(url: string, params: [string, string][]): string {
  const data = [...params].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).reduce((s, [k, v]) => s + k + v, url);
  return createHmac("sha1", AUTH_TOKEN).update(data, "utf8").digest("base64");
}

function formOf(params: [string, string][]): string {
  return new URLSearchParams(params).toString();
}

/** An inbound SMS webhook's parameters, as Twilio posts them. */
function inboundParams(messageSid: string, from: string, body: string): [string, string][] {
  return [
    ["ToCountry", "US"],
    ["ToState", "CA"],
    ["SmsMessageSid", messageSid],
    ["NumMedia", "0"],
    ["ToCity", ""],
    ["FromZip", ""],
    ["SmsSid", messageSid],
    ["FromState", "CA"],
    ["SmsStatus", "received"],
    ["FromCity", ""],
    ["Body", body],
    ["FromCountry", "US"],
    ["To", LINE_HANDLE],
    ["MessagingServiceSid", ""],
    ["ToZip", ""],
    ["NumSegments", "1"],
    ["MessageSid", messageSid],
    ["AccountSid", ACCOUNT_SID],
    ["From", from],
    ["ApiVersion", "2010-04-01"],
  ].filter(([k]) => k !== "MessagingServiceSid") as [string, string][];
}

/** A status callback's parameters, as Twilio posts them. */
function statusParams(messageSid: string, to: string, status: "sent" | "delivered"): [string, string][] {
  const params: [string, string][] = [
    ["SmsSid", messageSid],
    ["SmsStatus", status],
    ["MessageStatus", status],
    ["To", to],
    ["MessageSid", messageSid],
    ["AccountSid", ACCOUNT_SID],
    ["From", LINE_HANDLE],
    ["ApiVersion", "2010-04-01"],
  ];
  if (status === "delivered") params.push(["RawDlrDoneDate", "2611251200"]);
  return params;
}

/** A stub of Twilio's Messages API: the probe and catch-up list an empty page. */
async function startTwilioStub(): Promise<{ url: string; unknown: string[]; close: () => Promise<void> }> {
  const unknown: string[] = [];
  const basic = `Basic ${Buffer.from(`${ACCOUNT_SID}:${AUTH_TOKEN}`).toString("base64")}`;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://stub");
      const send = (status: number, body: unknown) => res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
      if (req.headers.authorization !== basic) return send(401, { code: 20003, message: "Authenticate", more_info: "https://www.twilio.com/docs/errors/20003", status: 401 });
      if (req.method === "GET" && url.pathname === `/2010-04-01/Accounts/${ACCOUNT_SID}/Messages.json`) {
        const pageSize = Number(url.searchParams.get("PageSize") ?? 50);
        return send(200, {
          messages: [],
          end: 0,
          first_page_uri: `${url.pathname}?PageSize=${pageSize}&Page=0`,
          next_page_uri: null,
          page: 0,
          page_size: pageSize,
          previous_page_uri: null,
          start: 0,
          uri: `${url.pathname}${url.search}`,
        });
      }
      unknown.push(`${req.method} ${url.pathname}`);
      return send(404, { code: 20404, message: "The requested resource was not found", more_info: "https://www.twilio.com/docs/errors/20404", status: 404 });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    unknown,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

interface Plan {
  requests: GeneratedRequest[];
  /** The event key of each request: `in:<sid>` or `st:<sid>:<status>`. */
  keyOf: string[];
}

/**
 * `count` distinct events: half inbound messages from SENDERS contacts, half status callbacks
 * for `sent` (a `sent` and a `delivered` callback each, in random order), and count/4 repeats
 * each placed after its original.
 */
function plan(url: string, count: number, sent: { sid: string; to: string }[], seed: number): Plan {
  const random = prng(seed);
  const events: { key: string; request: GeneratedRequest }[] = [];
  const signed = (params: [string, string][]): GeneratedRequest => ({ form: formOf(params), signature: sign(url, params) });
  const inbound = count - sent.length * 2;
  for (let k = 0; k < inbound; k++) {
    const messageSid = sid();
    const from = `+1555300${String(k % SENDERS).padStart(4, "0")}`;
    events.push({ key: `in:${messageSid}`, request: signed(inboundParams(messageSid, from, `twilio bench ${k}`)) });
  }
  for (const m of sent) {
    const order: ("sent" | "delivered")[] = random() < 0.5 ? ["sent", "delivered"] : ["delivered", "sent"];
    for (const status of order) events.push({ key: `st:${m.sid}:${status}`, request: signed(statusParams(m.sid, m.to, status)) });
  }
  // Interleave: a callback pair keeps its order, everything else is shuffled around it.
  for (let i = events.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [events[i], events[j]] = [events[j]!, events[i]!];
  }
  const requests: GeneratedRequest[] = [];
  const keyOf: string[] = [];
  for (const e of events) {
    requests.push(e.request);
    keyOf.push(e.key);
    if (random() < 0.25 && requests.length > 1) {
      const n = requests.length;
      const from = random() < 0.5 ? n - 1 - Math.floor(random() * Math.min(32, n)) : Math.floor(random() * n);
      requests.push(requests[from]!);
      keyOf.push(keyOf[from]!);
    }
  }
  return { requests, keyOf };
}

export async function measureTwilio(t: Target): Promise<TwilioResults> {
  const stub = await startTwilioStub();
  const { verifyWebhook } = await import("../server/webhooks/signing");
  let secret = "";
  const received = new Map<string, number>();
  let badSignatures = 0;
  let lastArrival = 0;
  const receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      try {
        const event = verifyWebhook(Buffer.concat(chunks).toString("utf8"), req.headers as Record<string, string>, secret);
        const key = `${event.event} ${(event.data as { guid?: string }).guid ?? ""}`;
        received.set(key, (received.get(key) ?? 0) + 1);
        lastArrival = Date.now();
      } catch {
        badSignatures++;
      }
      res.writeHead(200, { "content-type": "text/plain" }).end("ok");
    });
  });
  receiver.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  const client = new pg.Client(t.db);
  try {
    // 1. A Twilio line through the operator CLI (its probe lists messages at the stub).
    const tsx = path.resolve("node_modules/.bin/tsx");
    const config = { accountSid: ACCOUNT_SID, authToken: AUTH_TOKEN, baseUrl: stub.url };
    const args = ["scripts/admin.ts", "line", "create", "--account", t.account, "--handle", LINE_HANDLE, "--provider", "twilio", "--provider-config", JSON.stringify(config)];
    let said = "";
    const lineId = (await run(tsx, args, t.env, 60_000, (text) => (said = text))).trim().split("\n").pop()!;
    if (!lineId.startsWith("ln_")) throw new Error(`the operator CLI did not create a Twilio line: ${lineId}`);
    // The URL the CLI says to set as the number's webhook carries the line's token (checked on every webhook).
    const token = new RegExp(`/api/inbound/${lineId}\\?token=([\\w-]+)`).exec(said)?.[1];
    if (!token) throw new Error(`the operator CLI did not print the line's inbound URL: ${said.slice(0, 500)}`);
    // Twilio signs the URL it calls: the public one (PUBLIC_URL is the server's base here).
    const url = `${t.base}/api/inbound/${lineId}?token=${token}`;
    await client.connect();

    // 2. A webhook for message.received and message.delivered on the line.
    const created = await (
      await fetch(`${t.base}/v1/webhooks`, {
        method: "POST",
        headers: { ...t.auth, "content-type": "application/json" },
        body: JSON.stringify({ from: LINE_HANDLE, url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/twilio-hook`, events: ["message.received", "message.delivered"] }),
      })
    ).json();
    if (!created.secret) throw new Error(`webhook not created: ${JSON.stringify(created)}`);
    secret = created.secret;

    // 3. Messages the line sent (as the outbox records them), a quarter of the events' worth.
    const seed = async (n: number, prefix: string) => {
      const sent = Array.from({ length: n }, (_, i) => ({ sid: sid(), to: `+1555400${String(i % SENDERS).padStart(4, "0")}` }));
      const { rows } = await client.query(`SELECT "accountId" FROM "Line" WHERE id = $1`, [lineId]);
      const accountId = (rows[0] as { accountId: string }).accountId;
      for (let i = 0; i < SENDERS; i++) {
        await client.query(
          `INSERT INTO "Chat" (id, "accountId", "lineId", identifier, service, participants, "hasReceivedInbound")
           VALUES ($1, $2, $3, $4, 'sms', ARRAY[$4], true) ON CONFLICT DO NOTHING`,
          [`cht_${prefix}${i}`, accountId, lineId, `+1555400${String(i).padStart(4, "0")}`],
        );
      }
      const chats = new Map(
        (await client.query(`SELECT id, identifier FROM "Chat" WHERE "lineId" = $1`, [lineId])).rows.map((r: { id: string; identifier: string }) => [r.identifier, r.id]),
      );
      for (let i = 0; i < sent.length; i += 500) {
        const slice = sent.slice(i, i + 500);
        const params: unknown[] = [];
        const values = slice.map((m, k) => {
          params.push(`msg_${prefix}${i + k}`, accountId, lineId, chats.get(m.to), m.sid, LINE_HANDLE, `sent ${i + k}`);
          const b = params.length - 7;
          return `($${b + 1}, $${b + 2}, $${b + 3}, $${b + 4}, $${b + 5}, $${b + 6}, $${b + 7}, true, 'sms', now(), 'sent')`;
        });
        await client.query(
          `INSERT INTO "Message" (id, "accountId", "lineId", "chatId", guid, sender, text, "isFromMe", service, "sentAt", "deliveryStatus") VALUES ${values.join(", ")}`,
          params,
        );
      }
      return sent;
    };
    const counts = async () => {
      const { rows } = await client.query(
        `SELECT count(*) FILTER (WHERE NOT "isFromMe")::int AS inbound,
                count(*) FILTER (WHERE "deliveryStatus" = 'delivered')::int AS delivered
         FROM "Message" WHERE "lineId" = $1`,
        [lineId],
      );
      return rows[0] as { inbound: number; delivered: number };
    };

    // 4. Warm-up (JIT, the chats of every sender), not counted.
    const warmSent = await seed(SENDERS, "warm");
    const warm = plan(url, SENDERS * 4, warmSent, 7);
    const warmReport = await generate(url, warm.requests, 8, 60);
    if (warmReport.statuses["200"] !== warm.requests.length) throw new Error(`warm-up answers: ${JSON.stringify(warmReport.statuses)}`);
    for (let i = 0; i < 300 && received.size < SENDERS * 3; i++) await sleep(100);
    const baseline = await counts();
    received.clear();

    // 5. The load, from the generator process, bounded in time.
    const sent = await seed(Math.floor(t.count / 4), "b");
    const p = plan(url, t.count, sent, 20_261_125);
    const cpuBefore = cpuSeconds(t.serverPid);
    const statsBefore = t.schema ? await tableStats(client, t.schema) : null;
    const report = await generate(url, p.requests, t.connections, t.seconds);
    const wanted = new Set(p.keyOf.slice(0, report.requests));
    const inboundSids = [...wanted].filter((k) => k.startsWith("in:")).map((k) => k.slice(3));
    const deliveredSids = [...wanted].filter((k) => k.endsWith(":delivered")).map((k) => k.split(":")[1]!);
    const callbacks = [...wanted].filter((k) => k.startsWith("st:")).length;

    // 6. Until everything is recorded and delivered (bounded).
    const deadline = Date.now() + 120_000;
    let lastRecorded = 0;
    for (;;) {
      const c = await counts();
      if (c.inbound - baseline.inbound >= inboundSids.length && c.delivered - baseline.delivered >= deliveredSids.length) {
        lastRecorded = Date.now();
        break;
      }
      if (Date.now() > deadline) break;
      await sleep(50);
    }
    const expectedEvents = inboundSids.length + deliveredSids.length;
    while (Date.now() < deadline && received.size < expectedEvents) await sleep(100);
    const cpu = cpuSeconds(t.serverPid) - cpuBefore;
    await sleep(1_000);
    const statsAfter = t.schema ? await tableStats(client, t.schema) : null;

    const stored = (await client.query(`SELECT guid, count(*)::int AS n FROM "Message" WHERE "lineId" = $1 AND guid = ANY($2::text[]) GROUP BY guid`, [lineId, inboundSids]))
      .rows as { guid: string; n: number }[];
    const delivered = Number(
      (await client.query(`SELECT count(*)::int AS n FROM "Message" WHERE "lineId" = $1 AND guid = ANY($2::text[]) AND "deliveryStatus" = 'delivered'`, [lineId, deliveredSids])).rows[0].n,
    );
    const arrived = [...received].filter(([k]) => {
      const [event, guid] = k.split(" ");
      return (event === "message.received" && inboundSids.includes(guid!)) || (event === "message.delivered" && deliveredSids.includes(guid!));
    });
    if (badSignatures) console.error(`[twilio] ${badSignatures} webhook deliveries with a bad signature at the receiver`);
    if (stub.unknown.length) console.error(`[twilio] the Twilio stub got requests it does not answer: ${[...new Set(stub.unknown)].join(", ")}`);
    const requestSeconds = (report.endedAt - report.startedAt) / 1000;
    return {
      inbound: inboundSids.length,
      callbacks,
      requests: report.requests,
      stoppedEarly: report.requests < p.requests.length,
      failures: Object.fromEntries(Object.entries(report.statuses).filter(([s]) => s !== "200")),
      requestSeconds,
      requestsPerSecond: report.requests / requestSeconds,
      p50: report.p50,
      p99: report.p99,
      eventsPerSecond: (inboundSids.length + callbacks) / ((lastRecorded - report.startedAt) / 1000),
      deliveredPerSecond: (inboundSids.length + callbacks) / ((Math.max(lastArrival, lastRecorded) - report.startedAt) / 1000),
      lostInbound: inboundSids.length - stored.length,
      duplicatedInbound: stored.reduce((n, r) => n + r.n - 1, 0),
      lostStatuses: deliveredSids.length - delivered,
      duplicatedEvents: [...received.values()].reduce((n, c) => n + c - 1, 0),
      undelivered: expectedEvents - arrived.length,
      cpuMsPerRequest: (cpu * 1000) / report.requests,
      perRequest:
        statsBefore && statsAfter
          ? { idxScans: (statsAfter.idx - statsBefore.idx) / report.requests, inserted: (statsAfter.ins - statsBefore.ins) / report.requests, updated: (statsAfter.upd - statsBefore.upd) / report.requests }
          : null,
    };
  } finally {
    await client.end().catch(() => undefined);
    receiver.closeAllConnections();
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
    await stub.close();
  }
}

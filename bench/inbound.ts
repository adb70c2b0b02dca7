// Inbound provider webhooks for npm run bench (bench/run.ts calls measureInbound against a
// running `next start`): BlueBubbles `new-message` webhooks POSTed to
// /api/inbound/<line_id>?token=..., a fifth of them redeliveries of an earlier message (byte for
// byte, as a provider retrying would send them), measured end to end: accepted, stored, and
// fanned out to a message.received webhook at a loopback receiver. Checks that every message
// is stored once and delivered once: 0 lost, 0 duplicated.
//
// The line is a real BlueBubbles line: the operator CLI connects it to a stub BlueBubbles
// server in this process (loopback), which answers the probe, the webhook registration (whose
// URL carries the line's inbound token) and catch-up (nothing to catch up).
//
// Load comes from a separate process, but not from wrk or the autocannon CLI: this part sends
// a fixed list of distinct bodies exactly once each (N unique, N/4 repeats), and neither can:
// autocannon's CLI sends one body, and wrk is bounded by time, not by a count of requests. The
// generator is bench/generator.ts in its own process: node:http with keep-alive,
// BENCH_CONNECTIONS requests in flight, in list order, no retries.
import { randomUUID } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import pg from "pg";
import { generate, prng, tableStats } from "./generator";
import { cpuSeconds, run } from "./load";

/** The events the server registers a BlueBubbles line's webhook for (server/platform/bluebubbles WEBHOOK_EVENTS). */
const WEBHOOK_EVENTS = ["new-message", "updated-message", "typing-indicator", "chat-read-status-changed", "message-send-error"];

export interface InboundResults {
  /** Distinct provider messages in the request list, and whether the time bound stopped the load before its end. */
  planned: number;
  stoppedEarly: boolean;
  /** Distinct provider messages sent. */
  unique: number;
  /** Requests sent (unique + repeats). */
  requests: number;
  repeats: number;
  /** Answers other than 200, by status ("socket" for errors and timeouts). */
  failures: Record<string, number>;
  /** What the route answered it did with the events (`received` of the 200 answers). */
  outcomes: Record<string, number>;
  /** From the first request sent to the last answer. */
  requestSeconds: number;
  requestsPerSecond: number;
  /** Unique events accepted per second (unique / requestSeconds). */
  acceptedPerSecond: number;
  p50: number;
  p99: number;
  /** From the first request to the last bench message's commit time (syncedAt). */
  storedSeconds: number;
  storedPerSecond: number;
  /** From the first request to the last message.received delivery arriving at the receiver. */
  fannedOutSeconds: number;
  fannedOutPerSecond: number;
  stored: number;
  /** Messages sent but not stored, and not delivered to the receiver. */
  lost: number;
  undelivered: number;
  /** Messages stored more than once (extra rows) for one GUID. */
  duplicatedMessages: number;
  /** message.received deliveries in the database for the bench messages, and extra ones. */
  deliveries: number;
  duplicatedDeliveries: number;
  /** At the receiver: distinct messages delivered, and deliveries beyond one per message. */
  received: number;
  duplicatedReceived: number;
  badSignatures: number;
  /** Server CPU ms per request, from the first request until everything was delivered. */
  cpuMsPerRequest: number;
  /** PostgreSQL only: the bench schema's table statistics per request (index scans, rows inserted, rows updated). */
  perRequest: { idxScans: number; seqScans: number; inserted: number; updated: number } | null;
}

interface Target {
  base: string;
  auth: Record<string, string>;
  /** The account's email (the line is created in it). */
  account: string;
  /** The server's environment, for the operator CLI. */
  env: NodeJS.ProcessEnv;
  db: pg.ClientConfig;
  /** The PostgreSQL schema of the server's tables (table statistics), or null on PGlite. */
  schema: string | null;
  /** Distinct messages in the request list (count/4 repeats are added). */
  count: number;
  /** No new request after this many seconds (the list is then sent in part). */
  seconds: number;
  connections: number;
  serverPid: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const LINE_HANDLE = "+15550009100";
const SENDERS = 50;
const PASSWORD = "bench-pw";

/** One BlueBubbles `new-message` webhook body (the notification shape of BlueBubbles Server 1.9.9). */
function newMessageBody(guid: string, rowId: number, senderIndex: number, dateCreated: number, text: string): string {
  const address = `+1555200${String(senderIndex).padStart(4, "0")}`;
  const handle = { originalROWID: senderIndex + 1, address, service: "iMessage", uncanonicalizedId: null, country: "us" };
  return JSON.stringify({
    type: "new-message",
    data: {
      originalROWID: rowId,
      guid,
      text,
      attributedBody: null,
      handle,
      handleId: senderIndex + 1,
      otherHandle: 0,
      attachments: [],
      subject: null,
      error: 0,
      dateCreated,
      dateRead: null,
      dateDelivered: null,
      isDelivered: false,
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
      chats: [{ originalROWID: senderIndex + 1, guid: `iMessage;-;${address}`, style: 45, chatIdentifier: address, isArchived: false, displayName: "" }],
      partCount: 1,
      dateEdited: null,
      dateRetracted: null,
    },
  });
}

/**
 * The request list: `count` unique messages over SENDERS senders, and count/4 repeats (20% of
 * all requests) each placed after its original: half repeat one of the last 32 messages (often
 * still in flight: the concurrent path), half any earlier message (already stored: the lookup).
 */
function requestList(count: number, firstRowId: number): { bodies: string[]; guidOf: string[] } {
  const random = prng(20_260_101);
  const repeats = Math.floor(count / 4);
  const total = count + repeats;
  const isRepeat = new Array<boolean>(total).fill(false);
  for (let placed = 0; placed < repeats; ) {
    const at = 1 + Math.floor(random() * (total - 1)); // never the first request
    if (!isRepeat[at]) {
      isRepeat[at] = true;
      placed++;
    }
  }
  const guids: string[] = [];
  const uniqueBodies: string[] = [];
  const bodies: string[] = [];
  /** The message GUID of each request. */
  const guidOf: string[] = [];
  const start = Date.now();
  for (let i = 0; i < total; i++) {
    if (isRepeat[i]) {
      const n = uniqueBodies.length;
      const from = random() < 0.5 ? n - 1 - Math.floor(random() * Math.min(32, n)) : Math.floor(random() * n);
      bodies.push(uniqueBodies[from]!);
      guidOf.push(guids[from]!);
      continue;
    }
    const k = guids.length;
    const guid = randomUUID().toUpperCase();
    const body = newMessageBody(guid, firstRowId + k, k % SENDERS, start + k, `inbound bench ${k}`);
    guids.push(guid);
    uniqueBodies.push(body);
    bodies.push(body);
    guidOf.push(guid);
  }
  return { bodies, guidOf };
}

interface StubState {
  registeredUrl: string | null;
  registrations: number;
  unknown: string[];
}

/** A BlueBubbles server stub answering what connecting, probing and catch-up ask. */
async function startBlueBubblesStub(): Promise<{ url: string; state: StubState; close: () => Promise<void> }> {
  const state: StubState = { registeredUrl: null, registrations: 0, unknown: [] };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://stub");
      const send = (body: unknown, status = 200) => res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
      if (url.searchParams.get("password") !== PASSWORD) return send({ status: 401, message: "Unauthorized" }, 401);
      const route = `${req.method} ${url.pathname}`;
      switch (route) {
        case "GET /api/v1/ping":
          return send({ status: 200, message: "Ping received!", data: "pong" });
        case "GET /api/v1/server/info":
          return send({
            status: 200,
            message: "Success",
            data: {
              computer_id: "x",
              os_version: "15.5",
              server_version: "1.9.9",
              private_api: true,
              helper_connected: true,
              proxy_service: null,
              detected_icloud: null,
              detected_imessage: null,
              macos_time_sync: null,
              local_ipv4s: [],
              local_ipv6s: [],
            },
          });
        case "GET /api/v1/webhook":
          return send({ status: 200, message: "Success", data: state.registeredUrl ? [{ id: 1, url: state.registeredUrl, events: WEBHOOK_EVENTS, created: "2026-01-01T00:00:00.000Z" }] : [] });
        case "POST /api/v1/webhook": {
          const body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}") as { url?: string };
          state.registeredUrl = body.url ?? null;
          state.registrations++;
          return send({ status: 200, message: "ok", data: { id: 1, url: body.url ?? "x", events: [], created: "2026-01-01T00:00:00.000Z" } });
        }
        case "POST /api/v1/message/query":
          return send({ status: 200, message: "Success", data: [], metadata: { offset: 0, limit: 500, total: 0, count: 0 } });
        default:
          state.unknown.push(route);
          return send({ status: 404, message: "Not Found" }, 404);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    state,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export async function measureInbound(t: Target): Promise<InboundResults> {
  const stub = await startBlueBubblesStub();
  // The message.received receiver: every delivery's signature checked, each message's GUID counted.
  const { verifyWebhook } = await import("../server/webhooks/signing");
  let secret = "";
  const receivedCounts = new Map<string, number>();
  let badSignatures = 0;
  let lastArrival = 0;
  const receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      try {
        const event = verifyWebhook(Buffer.concat(chunks).toString("utf8"), req.headers as Record<string, string>, secret);
        const guid = (event.data as { guid?: string }).guid ?? "";
        receivedCounts.set(guid, (receivedCounts.get(guid) ?? 0) + 1);
        lastArrival = Date.now();
      } catch {
        badSignatures++;
      }
      res.writeHead(200, { "content-type": "text/plain" }).end("ok");
    });
  });
  receiver.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  // Connected only after the operator CLI has run: PGlite's socket serves one client at a time.
  const client = new pg.Client(t.db);
  try {
    // 1. A BlueBubbles line, connected through the operator CLI (probe + webhook registration).
    const tsx = path.resolve("node_modules/.bin/tsx");
    const args = ["scripts/admin.ts", "line", "create", "--account", t.account, "--handle", LINE_HANDLE, "--provider", "bluebubbles"];
    args.push("--provider-config", JSON.stringify({ url: stub.url, password: PASSWORD }));
    // Asynchronously: the CLI probes the stub, which answers from this process's event loop.
    const lineId = (await run(tsx, args, t.env, 60_000)).trim().split("\n").pop()!;
    // The CLI registers nothing: the running server does, at its own PUBLIC_URL, at its next line check.
    for (const until = Date.now() + 30_000; !stub.state.registeredUrl && Date.now() < until; ) await new Promise((r) => setTimeout(r, 200));
    const registered = stub.state.registeredUrl;
    if (!registered) throw new Error(`line ${lineId} registered no webhook with the stub (requests it did not expect: ${stub.state.unknown.join(", ") || "none"})`);
    const inboundUrl = new URL(registered);
    if (inboundUrl.pathname !== `/api/inbound/${lineId}` || !inboundUrl.searchParams.get("token")) throw new Error(`unexpected inbound URL ${registered}`);
    const url = `${t.base}${inboundUrl.pathname}${inboundUrl.search}`;
    await client.connect();

    // 2. A message.received webhook of the account on that line (BENCH_INBOUND_HOOK=false: none,
    //    to measure ingestion without fan-out and delivery in the same server process).
    const withHook = process.env.BENCH_INBOUND_HOOK !== "false";
    const created = !withHook ? { id: "none", secret: "none" } : await (
      await fetch(`${t.base}/v1/webhooks`, {
        method: "POST",
        headers: { ...t.auth, "content-type": "application/json" },
        body: JSON.stringify({ from: LINE_HANDLE, url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/inbound-hook`, events: ["message.received"] }),
      })
    ).json();
    if (!created.secret) throw new Error(`webhook not created: ${JSON.stringify(created)}`);
    secret = created.secret;

    const storedGuids = async () =>
      (await client.query(`SELECT guid FROM "Message" WHERE "lineId" = $1`, [lineId])).rows.map((r: { guid: string }) => r.guid);
    const messageCount = async () => Number((await client.query(`SELECT count(*)::int AS n FROM "Message" WHERE "lineId" = $1`, [lineId])).rows[0].n);
    const deliveryCount = async () =>
      Number((await client.query(`SELECT count(*)::int AS n FROM "WebhookDelivery" WHERE "webhookId" = $1`, [created.id])).rows[0].n);

    // 3. Warm-up (JIT, the chat of every sender), not counted: one message per sender and repeats.
    const warm = requestList(SENDERS, 1);
    const warmReport = await generate(url, warm.bodies, 8, 60);
    if (warmReport.statuses["200"] !== warm.bodies.length) throw new Error(`warm-up answers: ${JSON.stringify(warmReport.statuses)}`);
    for (let i = 0; i < 300 && withHook && (receivedCounts.size < SENDERS || (await deliveryCount()) < SENDERS); i++) await sleep(100);
    const baseline = { messages: await messageCount(), deliveries: await deliveryCount() };
    receivedCounts.clear();

    // 4. The load: unique messages and 20% repeats, from a separate process, bounded in time.
    const { bodies, guidOf } = requestList(t.count, 1_000);
    const cpuBefore = cpuSeconds(t.serverPid);
    const statsBefore = t.schema ? await tableStats(client, t.schema) : null;
    const report = await generate(url, bodies, t.connections, t.seconds);
    // The requests sent are a prefix of the list; their distinct messages are the ones expected.
    const wanted = new Set(guidOf.slice(0, report.requests));
    const unique = wanted.size;

    // 5. Until every message is stored and delivered (bounded), then a second for late repeats.
    const deadline = Date.now() + 120_000;
    while (Date.now() < deadline && (await messageCount()) - baseline.messages < unique) await sleep(250);
    const receivedWanted = () => [...receivedCounts.keys()].filter((g) => wanted.has(g)).length;
    while (withHook && Date.now() < deadline && (receivedWanted() < unique || (await deliveryCount()) - baseline.deliveries < unique)) await sleep(100);
    const cpu = cpuSeconds(t.serverPid) - cpuBefore;
    await sleep(1_000);
    const statsAfter = t.schema ? await tableStats(client, t.schema) : null;

    const all = await storedGuids();
    const counts = new Map<string, number>();
    for (const g of all) counts.set(g, (counts.get(g) ?? 0) + 1);
    const stored = [...wanted].filter((g) => counts.has(g)).length;
    const duplicatedMessages = [...counts.values()].reduce((n, c) => n + c - 1, 0);
    const lastStored = Number(
      (await client.query(`SELECT (extract(epoch FROM max("syncedAt")) * 1000)::float8 AS at FROM "Message" WHERE "lineId" = $1`, [lineId])).rows[0].at,
    );
    const dl = (
      await client.query(
        `SELECT count(*)::int AS n, count(DISTINCT payload->>'guid')::int AS distinct_guids FROM "WebhookDelivery"
         WHERE "webhookId" = $1 AND event = 'message.received' AND payload->>'guid' = ANY($2::text[])`,
        [created.id, [...wanted]],
      )
    ).rows[0] as { n: number; distinct_guids: number };
    const receivedBench = [...receivedCounts].filter(([g]) => wanted.has(g));
    const failures = Object.fromEntries(Object.entries(report.statuses).filter(([s]) => s !== "200"));
    const requestSeconds = (report.endedAt - report.startedAt) / 1000;
    const storedSeconds = (lastStored - report.startedAt) / 1000;
    const fannedOutSeconds = (lastArrival - report.startedAt) / 1000;
    const strangers = all.length - baseline.messages - stored;
    if (strangers !== 0) console.error(`[inbound] ${strangers} messages on the line that the bench did not send`);
    if (stub.state.unknown.length) console.error(`[inbound] the BlueBubbles stub got requests it does not answer: ${[...new Set(stub.state.unknown)].join(", ")}`);
    return {
      planned: t.count,
      stoppedEarly: report.requests < bodies.length,
      unique,
      requests: report.requests,
      repeats: report.requests - unique,
      failures,
      outcomes: report.outcomes,
      requestSeconds,
      requestsPerSecond: report.requests / requestSeconds,
      acceptedPerSecond: unique / requestSeconds,
      p50: report.p50,
      p99: report.p99,
      storedSeconds,
      storedPerSecond: stored / storedSeconds,
      fannedOutSeconds,
      fannedOutPerSecond: receivedBench.length / fannedOutSeconds,
      stored,
      lost: unique - stored,
      undelivered: unique - receivedBench.length,
      duplicatedMessages,
      deliveries: dl.n,
      duplicatedDeliveries: dl.n - dl.distinct_guids,
      received: receivedBench.length,
      duplicatedReceived: receivedBench.reduce((n, [, c]) => n + c - 1, 0),
      badSignatures,
      cpuMsPerRequest: (cpu * 1000) / report.requests,
      perRequest:
        statsBefore && statsAfter
          ? {
              idxScans: (statsAfter.idx - statsBefore.idx) / report.requests,
              seqScans: (statsAfter.seq - statsBefore.seq) / report.requests,
              inserted: (statsAfter.ins - statsBefore.ins) / report.requests,
              updated: (statsAfter.upd - statsBefore.upd) / report.requests,
            }
          : null,
    };
  } finally {
    await client.end();
    receiver.closeAllConnections();
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
    await stub.close();
  }
}

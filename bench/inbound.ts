// The provider side of the inbound part of npm run bench (bench/pipeline.ts measures): a real
// BlueBubbles line, and the load on its webhook URL.
//
// The line is connected by the operator CLI to a stub BlueBubbles server in this process
// (loopback), which answers the probe, the webhook registration (whose URL carries the line's
// inbound token) and catch-up (nothing to catch up).
//
// The load is wrk in its own process with bench/inbound.lua: BlueBubbles `new-message` webhooks
// POSTed to /api/inbound/<line_id>?token=..., a new body per request, a fifth of the requests
// byte-identical redeliveries of an earlier message. wrk, not a node generator: it sustains the
// load for a set time at a fraction of node's CPU, which on a small machine is taken from the
// server. The part needs it: the node generator (bench/generator.ts) sends a fixed list, and the
// per-request bodies and repeats would have to be made twice, in Lua and in TypeScript.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { run } from "./load";

/** The events the server registers a BlueBubbles line's webhook for (server/platform/bluebubbles WEBHOOK_EVENTS). */
const WEBHOOK_EVENTS = ["new-message", "updated-message", "typing-indicator", "chat-read-status-changed", "message-send-error"];

const LINE_HANDLE = "+15550009100";
/** The contacts writing to the line (message k comes from sender k % SENDERS). */
export const SENDERS = 50;
const PASSWORD = "bench-pw";
const FIRST_ROW_ID = 1_000;

/** The address of sender `i` (also the contacts the held scheduled sends go to). */
export const senderAddress = (i: number) => `+1555200${String(i).padStart(4, "0")}`;

/** One BlueBubbles `new-message` webhook body (the notification shape of BlueBubbles Server 1.9.9). */
function newMessageBody(guid: string, rowId: number, senderIndex: number, dateCreated: number, text: string): string {
  const address = senderAddress(senderIndex);
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

export interface InboundLine {
  id: string;
  handle: string;
  /** The URL the server registered with BlueBubbles for its webhooks, on the bench's server. */
  url: string;
  /** Routes the stub was asked for and does not answer (none expected). */
  unknown: () => string[];
  close: () => Promise<void>;
}

/** A BlueBubbles line, connected through the operator CLI (probe), its webhook registered by the running server. */
export async function connectLine(t: { base: string; account: string; env: NodeJS.ProcessEnv }): Promise<InboundLine> {
  const stub = await startBlueBubblesStub();
  try {
    const tsx = path.resolve("node_modules/.bin/tsx");
    const args = ["scripts/admin.ts", "line", "create", "--account", t.account, "--handle", LINE_HANDLE, "--provider", "bluebubbles"];
    args.push("--provider-config", JSON.stringify({ url: stub.url, password: PASSWORD }));
    // Asynchronously: the CLI probes the stub, which answers from this process's event loop.
    const id = (await run(tsx, args, t.env, 60_000)).trim().split("\n").pop()!;
    // The CLI registers nothing: the running server does, at its own PUBLIC_URL, at its next line check.
    for (const until = Date.now() + 30_000; !stub.state.registeredUrl && Date.now() < until; ) await new Promise((r) => setTimeout(r, 200));
    const registered = stub.state.registeredUrl;
    if (!registered) throw new Error(`line ${id} registered no webhook with the stub (requests it did not expect: ${stub.state.unknown.join(", ") || "none"})`);
    const inbound = new URL(registered);
    if (inbound.pathname !== `/api/inbound/${id}` || !inbound.searchParams.get("token")) throw new Error(`unexpected inbound URL ${registered}`);
    return { id, handle: LINE_HANDLE, url: `${t.base}${inbound.pathname}${inbound.search}`, unknown: () => [...new Set(stub.state.unknown)], close: stub.close };
  } catch (err) {
    await stub.close();
    throw err;
  }
}

/** The GUID of message k of a run: the run's 24-character prefix and k in 12 hex digits (bench/inbound.lua makes the same). */
export const guidOf = (prefix: string, k: number) => prefix + k.toString(16).toUpperCase().padStart(12, "0");

export interface WrkReport {
  /** When wrk stopped sending (this process's clock), and how long it sent. */
  stoppedAt: number;
  seconds: number;
  requests: number;
  /** The GUIDs of the distinct messages sent. */
  sent: string[];
  repeats: number;
  /** Answers by status; socket errors and timeouts as "socket". */
  statuses: Record<string, number>;
  /** What the route answered it did (its `received` counts). */
  outcomes: Record<string, number>;
  p50: number;
  p99: number;
}

function wrkInstalled(): boolean {
  try {
    execFileSync("sh", ["-c", "command -v wrk"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/**
 * wrk with bench/inbound.lua against `url` for `seconds`, `connections` in flight; every body
 * a message of the run `prefix` (24 characters) from one of SENDERS senders.
 */
export async function runWrk(url: string, prefix: string, seconds: number, connections: number): Promise<WrkReport> {
  if (!wrkInstalled()) throw new Error("the inbound part needs wrk (Debian: apt-get install wrk) to send a new body per request; skip it with BENCH_PARTS");
  // The body's pieces around its variable values, cut from newMessageBody with markers.
  const marks: Record<string, string> = { guid: "@GUID@", text: "@TEXT@", row: "987654320001", date: "987654320002" };
  const pieces: string[][] = [];
  let order: string[] = [];
  for (let s = 0; s < SENDERS; s++) {
    const json = newMessageBody(marks.guid!, Number(marks.row), s, Number(marks.date), marks.text!);
    const split = json.split(/(@GUID@|@TEXT@|987654320001|987654320002)/);
    pieces.push(split.filter((_, i) => i % 2 === 0));
    order = split.filter((_, i) => i % 2 === 1).map((m) => Object.keys(marks).find((k) => marks[k] === m)!);
    if (!/^[\x20-\x7e]*$/.test(json) || order.length !== 4) throw new Error("the BlueBubbles body template is not what bench/inbound.lua expects");
  }
  const dir = mkdtempSync(path.join(tmpdir(), "relay-inbound-wrk-"));
  try {
    const spec = path.join(dir, "spec.lua");
    // A JSON string of printable ASCII is a valid Lua string literal.
    const lua = (v: unknown): string => (Array.isArray(v) ? `{${v.map(lua).join(",")}}` : JSON.stringify(v));
    const fields = { prefix, senders: SENDERS, firstRow: FIRST_ROW_ID, start: Date.now(), seed: 20_260_101, threads: 1, order, pieces };
    writeFileSync(spec, `return {${Object.entries(fields).map(([k, v]) => `${k} = ${lua(v)}`).join(",\n")}}\n`);
    const script = path.resolve("bench/inbound.lua");
    const args = ["-t1", `-c${connections}`, `-d${seconds}s`, "--timeout", "10s", "-s", script, url, "--", spec];
    const out = await run("wrk", args, undefined, (seconds + 60) * 1000);
    const stoppedAt = Date.now();
    const line = out.split("\n").find((l) => l.startsWith("BENCH_JSON "));
    if (!line) throw new Error(`wrk printed no figures: ${out.slice(0, 500)}`);
    const r = JSON.parse(line.slice("BENCH_JSON ".length)) as {
      threads: { id: number; unique: number; repeats: number; statuses: Record<string, number>; outcomes: Record<string, number> }[];
      requests: number;
      duration_us: number;
      socket_errors: number;
      p50_us: number;
      p99_us: number;
    };
    const sum = (pick: (t: (typeof r.threads)[number]) => Record<string, number>) => {
      const total: Record<string, number> = {};
      for (const t of r.threads) for (const [k, v] of Object.entries(pick(t))) total[k] = (total[k] ?? 0) + v;
      return total;
    };
    const statuses = sum((t) => t.statuses);
    if (r.socket_errors) statuses.socket = r.socket_errors;
    const sent = r.threads.flatMap((t) => Array.from({ length: t.unique }, (_, i) => guidOf(prefix, i * r.threads.length + t.id)));
    const repeats = r.threads.reduce((n, t) => n + t.repeats, 0);
    return { stoppedAt, seconds: r.duration_us / 1e6, requests: r.requests, sent, repeats, statuses, outcomes: sum((t) => t.outcomes), p50: r.p50_us / 1000, p99: r.p99_us / 1000 };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

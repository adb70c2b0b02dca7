// The webhook receiver of the inbound part (bench/pipeline.ts), run as its own process so that
// its work (reading, verifying, recording every delivery) is not counted in the bench's event
// loop and competes for the CPU as a real receiver on the same machine would. One process with
// one loopback port per webhook: five node processes on a 2-core machine would take more from
// the server than the receiving itself costs. Every port answers 200 as soon as the body is
// read, then verifies the signature with its own webhook's secret and records, per delivery,
// the event's message GUID, the time the request arrived, and X-Webhook-Timestamp (the
// server signs it as the moment it starts the attempt: the delivery's send time).
// The parent drives it over IPC (startReceiver below): secrets, reset, status, report.
import { fork } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/** What one port recorded since the last reset: the first delivery of each GUID, and how many came. */
export interface PortRecord {
  guids: string[];
  /** X-Webhook-Timestamp of the first delivery of each GUID (ms). */
  sent: number[];
  /** Arrival of the first delivery of each GUID (ms, this machine's clock, sub-ms). */
  arrived: number[];
  /** Deliveries of each GUID (more than 1: delivered twice). */
  counts: number[];
  badSignatures: number;
  /** Deliveries of events whose GUID does not start with the prefix (earlier runs' backlog). */
  others: number;
}

export interface ReceiverStatus {
  /** Distinct GUIDs of the prefix received, per port. */
  distinct: number[];
  badSignatures: number;
}

type ToChild = { type: "secrets"; secrets: string[] } | { type: "reset"; prefix: string } | { type: "status" } | { type: "report"; file: string };
type ToParent = { type: "ready"; ports: number[] } | { type: "status"; status: ReceiverStatus } | { type: "done" };

async function receiverMain(portCount: number): Promise<void> {
  const { verifyWebhook } = await import("../server/webhooks/signing");
  let secrets: string[] = [];
  let prefix = "\u0000";
  const fresh = (): PortRecord & { index: Map<string, number> } => ({ guids: [], sent: [], arrived: [], counts: [], badSignatures: 0, others: 0, index: new Map() });
  let records = Array.from({ length: portCount }, fresh);
  const servers = Array.from({ length: portCount }, (_, port) => {
    const server = http.createServer((req, res) => {
      const arrived = performance.timeOrigin + performance.now();
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        res.writeHead(200, { "content-type": "text/plain" }).end("ok");
        const r = records[port]!;
        try {
          const event = verifyWebhook(Buffer.concat(chunks).toString("utf8"), req.headers as Record<string, string>, secrets[port] ?? "");
          const guid = (event.data as { guid?: string }).guid ?? "";
          if (!guid.startsWith(prefix)) {
            r.others++;
            return;
          }
          const seen = r.index.get(guid);
          if (seen !== undefined) {
            r.counts[seen]!++;
            return;
          }
          r.index.set(guid, r.guids.length);
          r.guids.push(guid);
          r.sent.push(Number(req.headers["x-webhook-timestamp"]));
          r.arrived.push(arrived);
          r.counts.push(1);
        } catch {
          r.badSignatures++;
        }
      });
    });
    // The server keeps its connections to a webhook open (keep-alive): so does a real receiver.
    server.keepAliveTimeout = 60_000;
    return server;
  });
  await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve))));
  const send = (m: ToParent) => process.send!(m);
  process.on("message", (m: ToChild) => {
    if (m.type === "secrets") secrets = m.secrets;
    else if (m.type === "reset") {
      prefix = m.prefix;
      records = Array.from({ length: portCount }, fresh);
    } else if (m.type === "status") {
      send({ type: "status", status: { distinct: records.map((r) => r.guids.length), badSignatures: records.reduce((n, r) => n + r.badSignatures, 0) } });
    } else if (m.type === "report") {
      writeFileSync(m.file, JSON.stringify(records.map(({ index: _, ...r }) => r)));
      send({ type: "done" });
    }
  });
  process.on("disconnect", () => process.exit(0));
  send({ type: "ready", ports: servers.map((s) => (s.address() as AddressInfo).port) });
}

export interface Receiver {
  urls: string[];
  setSecrets(secrets: string[]): void;
  /** Forgets what was recorded; from now on records only GUIDs starting with `prefix`. */
  reset(prefix: string): void;
  status(): Promise<ReceiverStatus>;
  /** What each port recorded since the last reset. */
  report(file: string): Promise<PortRecord[]>;
  stop(): void;
}

/** Starts the receiver process with `ports` ports (one per webhook). */
export async function startReceiver(ports: number): Promise<Receiver> {
  const child = fork(fileURLToPath(import.meta.url), ["receive", String(ports)], { execArgv: ["--import", "tsx"], stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const next = (type: ToParent["type"]) =>
    new Promise<ToParent>((resolve, reject) => {
      const onMessage = (m: ToParent) => {
        if (m.type !== type) return;
        child.off("message", onMessage);
        child.off("exit", onExit);
        resolve(m);
      };
      const onExit = (code: number | null) => reject(new Error(`the webhook receiver exited (${code})`));
      child.on("message", onMessage);
      child.once("exit", onExit);
    });
  const ready = (await next("ready")) as Extract<ToParent, { type: "ready" }>;
  const tell = (m: ToChild) => child.send(m);
  return {
    urls: ready.ports.map((p, i) => `http://127.0.0.1:${p}/hook-${i + 1}`),
    setSecrets: (secrets) => tell({ type: "secrets", secrets }),
    reset: (prefix) => tell({ type: "reset", prefix }),
    status: async () => {
      const answer = next("status");
      tell({ type: "status" });
      return ((await answer) as Extract<ToParent, { type: "status" }>).status;
    },
    report: async (file) => {
      const answer = next("done");
      tell({ type: "report", file });
      await answer;
      return JSON.parse(readFileSync(file, "utf8")) as PortRecord[];
    },
    stop: () => {
      if (child.connected) child.disconnect();
      if (child.exitCode === null) child.kill("SIGTERM");
    },
  };
}

// The receiver process (see the top of this file).
if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href && process.argv[2] === "receive") {
  receiverMain(Number(process.argv[3])).catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}

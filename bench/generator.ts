// The load generator of the twilio part of npm run bench (bench/twilio.ts; the inbound part
// uses wrk, bench/inbound.lua), run as its own process: `node --import tsx bench/generator.ts generate URL
// FILE CONNECTIONS SECONDS` POSTs the requests of FILE (one JSON line each: a JSON body, or a
// Twilio form body with its signature) once each, in list order, CONNECTIONS in flight, over
// node:http with keep-alive, no retries, and prints its figures as one BENCH_JSON line. Neither
// wrk nor the autocannon CLI can send a fixed list of distinct bodies exactly once each.
// Also here: what the provider parts share (a seeded PRNG, table statistics).

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type pg from "pg";
import { run } from "./load";

/** A deterministic PRNG (mulberry32), so every run sends the same pattern of repeats. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface GeneratorReport {
  startedAt: number;
  endedAt: number;
  requests: number;
  statuses: Record<string, number>;
  outcomes: Record<string, number>;
  p50: number;
  p99: number;
}

/**
 * A request of the list: a JSON body, or (Twilio) a form body with the X-Twilio-Signature it
 * must carry.
 */
export type GeneratedRequest = string | { form: string; signature: string };

/** Runs the generator process over `requests` (no new request after `seconds`); resolves with its report. */
export async function generate(url: string, requests: GeneratedRequest[], connections: number, seconds: number): Promise<GeneratorReport> {
  const dir = mkdtempSync(path.join(tmpdir(), "relay-inbound-"));
  try {
    const file = path.join(dir, "bodies.jsonl");
    writeFileSync(file, requests.map((r) => JSON.stringify(r)).join("\n"));
    const self = fileURLToPath(import.meta.url);
    const args = ["--import", "tsx", self, "generate", url, file, String(connections), String(seconds)];
    const out = await run(process.execPath, args, undefined, (seconds + 60) * 1000);
    const line = out.split("\n").find((l) => l.startsWith("BENCH_JSON "));
    if (!line) throw new Error(`the inbound load generator printed no figures: ${out.slice(0, 500)}`);
    return JSON.parse(line.slice("BENCH_JSON ".length)) as GeneratorReport;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The generator process: POSTs the lines of `file` to `url` once each, `connections` at a time,
 * in order, sending no new one after `seconds` (the requests sent are then a prefix of the list).
 */
async function generatorMain(url: string, file: string, connections: number, seconds: number): Promise<void> {
  const requests = readFileSync(file, "utf8")
    .split("\n")
    .map((line): { body: Buffer; headers: Record<string, string> } => {
      const r = JSON.parse(line) as GeneratedRequest;
      return typeof r === "string"
        ? { body: Buffer.from(r, "utf8"), headers: { "content-type": "application/json" } }
        : { body: Buffer.from(r.form, "utf8"), headers: { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": r.signature } };
    });
  const target = new URL(url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  const outcomes: Record<string, number> = {};
  let next = 0;
  const post = ({ body, headers }: { body: Buffer; headers: Record<string, string> }) =>
    new Promise<void>((resolve) => {
      const started = performance.now();
      const req = http.request(
        {
          agent,
          host: target.hostname,
          port: target.port,
          path: target.pathname + target.search,
          method: "POST",
          headers: { ...headers, "content-length": body.length },
          timeout: 30_000,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => {
            latencies.push(performance.now() - started);
            const status = String(res.statusCode);
            statuses[status] = (statuses[status] ?? 0) + 1;
            if (res.statusCode === 200 && res.headers["content-type"]?.startsWith("application/json")) {
              try {
                const received = (JSON.parse(Buffer.concat(chunks).toString("utf8")) as { received?: Record<string, number> }).received ?? {};
                for (const [k, v] of Object.entries(received)) outcomes[k] = (outcomes[k] ?? 0) + v;
              } catch {
                outcomes.unparsable = (outcomes.unparsable ?? 0) + 1;
              }
            }
            resolve();
          });
        },
      );
      req.on("timeout", () => req.destroy(new Error("timeout")));
      req.on("error", () => {
        statuses.socket = (statuses.socket ?? 0) + 1;
        resolve();
      });
      req.end(body);
    });
  const startedAt = Date.now();
  const stopAt = startedAt + seconds * 1000;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (next < requests.length && Date.now() < stopAt) await post(requests[next++]!);
    }),
  );
  const endedAt = Date.now();
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((latencies.length * p) / 100))] ?? 0;
  const report: GeneratorReport = { startedAt, endedAt, requests: next, statuses, outcomes, p50: pct(50), p99: pct(99) };
  process.stdout.write(`BENCH_JSON ${JSON.stringify(report)}\n`);
}

/** The schema's table statistics summed (PostgreSQL). */
export async function tableStats(client: pg.Client, schema: string) {
  const { rows } = await client.query(
    `SELECT coalesce(sum(idx_scan), 0)::bigint AS idx, coalesce(sum(seq_scan), 0)::bigint AS seq,
            coalesce(sum(n_tup_ins), 0)::bigint AS ins, coalesce(sum(n_tup_upd), 0)::bigint AS upd
     FROM pg_stat_user_tables WHERE schemaname = $1`,
    [schema],
  );
  const r = rows[0] as Record<string, string>;
  return { idx: Number(r.idx), seq: Number(r.seq), ins: Number(r.ins), upd: Number(r.upd) };
}

// The generator process (see the top of this file).
if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href && process.argv[2] === "generate") {
  generatorMain(process.argv[3]!, process.argv[4]!, Number(process.argv[5]), Number(process.argv[6])).catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}

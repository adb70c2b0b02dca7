// What npm run bench prints for the inbound part (bench/pipeline.ts): a row per database and
// scenario, the held items' figures, and each target next to what was measured.
import type { IdleCpu } from "./held";
import type { InboundResults, ScenarioResults } from "./pipeline";

type Rows = { database: string; r: InboundResults }[];

const n0 = (x: number) => (Number.isFinite(x) ? Math.round(x).toLocaleString("en-US") : "-");
const ms = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : "-");
const counts = (o: Record<string, number>) =>
  Object.entries(o)
    .filter(([, v]) => v)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k} ${v}`)
    .join(", ") || "0";

/**
 * The targets of issue 39 on PostgreSQL; PGlite's rates are half of them (an embedded database
 * in the server's own process), the times the same.
 */
function targets(database: string) {
  const share = database === "postgres" ? 1 : 0.5;
  return { oneStored: 2_000 * share, oneDelivered: 2_000 * share, lagP99: 2_000, backlog: 2, manyStored: 1_000 * share, manyDeliveries: 5_000 * share };
}

const idle = (c: IdleCpu) => `${c.server.toFixed(1)}%${c.db === null ? "" : ` (+${c.db.toFixed(1)}% in its PostgreSQL backends)`}`;
const verdict = (ok: boolean) => (ok ? "met" : "NOT met");

function scenarioRow(database: string, s: ScenarioResults): string {
  const cells = [
    database.padEnd(10),
    s.label.padEnd(24),
    n0(s.requestsPerSecond).padStart(6),
    `${s.p50.toFixed(0)}/${s.p99.toFixed(0)}`.padStart(8),
    counts(s.notOk).padStart(7),
    n0(s.sent).padStart(8),
    n0(s.storedPerSecond).padStart(9),
    n0(s.deliveredPerSecond).padStart(12),
    n0(s.deliveriesPerSecond).padStart(13),
    `${ms(s.lagP50)}/${ms(s.lagP99)}`.padStart(12),
    `${ms(s.arrivalP50)}/${ms(s.arrivalP99)}`.padStart(13),
    `${s.backlogSeconds.toFixed(1)}${s.drained ? "" : "+"}`.padStart(9),
    `${s.lostNotStored}/${s.lostNotDelivered}`.padStart(11),
    `${s.duplicatedStored}/${s.duplicatedReceived + s.duplicatedRows}`.padStart(9),
    String(s.badSignatures).padStart(7),
    `${s.serverCores.toFixed(2)}${s.dbCores === null ? "" : `+${s.dbCores.toFixed(2)}`}`.padStart(10),
    s.cpuMsPerEvent.toFixed(2).padStart(10),
  ];
  return `${cells.join(" ")}  ${counts(s.outcomes)}`;
}

export function inboundReport(rows: Rows, o: { seconds: number; connections: number }): string[] {
  const out: string[] = [];
  out.push(
    `\nInbound event pipeline: BlueBubbles new-message webhooks to /api/inbound/<line_id> from wrk (a new body per request, 20% byte-identical redeliveries), ${o.connections} connections, ${o.seconds} s of load per scenario; message.received webhooks to a receiver process that verifies every signature`,
  );
  out.push(
    "  rates over the load window: stored = rows by syncedAt, delivered = first deliveries arriving (the slowest webhook), deliveries = all webhooks; lag = syncedAt -> X-Webhook-Timestamp (send), arrival = syncedAt -> arrival at the receiver; backlog = load end -> last delivery (+: not all delivered)",
  );
  out.push(
    "database   scenario                  req/s  p50/p99  not 200     sent  stored/s  delivered/s  deliveries/s  lag p50/p99  arrival 50/99  backlog s  lost st/dl  dup st/dl  bad sig  cores srv(+db)  CPU ms/ev  route's answers",
  );
  for (const { database, r } of rows) {
    if (r.vacuumedByBench) out.push(`${database.padEnd(10)} autovacuum is off on this PostgreSQL: the bench stood in for it (every autovacuum_naptime, the bench schema's tables past autovacuum's thresholds)`);
    for (const s of r.scenarios) out.push(scenarioRow(database, s));
    for (const s of r.scenarios.filter((x) => x.waitingAtStart || !x.drained || x.retried || x.unsettled)) {
      const notes = [];
      if (s.retried || s.unsettled) notes.push(`${n0(s.retried)} deliveries attempted more than once, ${n0(s.unsettled)} not succeeded at the end`);
      if (s.waitingAtStart) notes.push(`started with ${n0(s.waitingAtStart)} deliveries of the scenario before still waiting (5 minutes did not empty the queue)`);
      if (!s.drained) notes.push(`${n0(s.lostNotDelivered)} stored messages not delivered when the wait ended (180 s without the backlog emptying, or the server holding none of them any more): counted as lost`);
      out.push(`${"".padEnd(10)} ${s.label}: ${notes.join("; ")}`);
    }
    for (const s of r.scenarios.filter((x) => x.slow.count)) {
      out.push(`${"".padEnd(10)} ${s.label}: ${n0(s.slow.count)} deliveries sent over 1 s after their message was stored, stored from ${s.slow.from.toFixed(1)} to ${s.slow.to.toFixed(1)} s into the load`);
    }
    // The same work per request in every scenario, or not: whether a slower run did more or waited more.
    for (const s of r.scenarios.filter((x) => x.perRequest)) {
      const p = s.perRequest!;
      out.push(`${"".padEnd(10)} per request, ${s.label}, from the schema's table statistics: ${p.idxScans.toFixed(1)} index scans, ${p.inserted.toFixed(2)} rows inserted, ${p.updated.toFixed(2)} rows updated`);
    }
  }
  const heldRows = rows.filter((x) => x.r.held);
  if (heldRows.length) {
    out.push("\nHeld scheduled sends on the inbound line (POST /v1/messages/batch, 1,000 per request; GET /v1/outbox at one connection; idle CPU over 10 s)");
    for (const { database, r } of heldRows) {
      const h = r.held!;
      out.push(
        `${database.padEnd(10)} ${n0(h.held)} scheduled in ${h.fillSeconds.toFixed(1)} s (${n0(h.held / h.fillSeconds)}/s; refused: ${counts(h.refused)}; held rows: ${n0(h.heldRows)}); idle CPU ${idle(h.idleBefore)} of a core with nothing held, ${idle(h.idleAfter)} with them held`,
      );
      for (const read of h.reads) {
        out.push(`${"".padEnd(10)} GET /v1/outbox?hold_reason= ${read.what.padEnd(40)} p50 ${read.p50.toFixed(1)} ms, p99 ${read.p99.toFixed(1)} ms, ${n0(read.rps)} req/s (${read.items} items a page)`);
      }
    }
  }
  for (const { database, r } of rows) {
    const t = targets(database);
    const one = r.scenarios.find((s) => s.webhooks === 1);
    const many = r.scenarios.find((s) => s.webhooks > 1);
    const ok = (s: ScenarioResults) => s.lostNotStored + s.lostNotDelivered + s.duplicatedStored + s.duplicatedReceived + s.duplicatedRows + s.badSignatures === 0;
    if (one) {
      out.push(
        `\n${database}: 1 webhook: ${n0(one.storedPerSecond)} stored/s (target >= ${n0(t.oneStored)}) -> ${verdict(one.storedPerSecond >= t.oneStored)}; ${n0(one.deliveredPerSecond)} delivered/s (>= ${n0(t.oneDelivered)}) -> ${verdict(one.deliveredPerSecond >= t.oneDelivered)}; lag p99 ${ms(one.lagP99)} ms (<= ${n0(t.lagP99)}) -> ${verdict(one.lagP99 <= t.lagP99)}; backlog empty ${one.backlogSeconds.toFixed(1)} s after the load (<= ${t.backlog}) -> ${verdict(one.drained && one.backlogSeconds <= t.backlog)}; lost, duplicated, bad signatures -> ${ok(one) ? "none" : "SOME"}`,
      );
    }
    if (many) {
      out.push(
        `${database}: ${many.webhooks} webhooks: ${n0(many.storedPerSecond)} stored/s (target >= ${n0(t.manyStored)}) -> ${verdict(many.storedPerSecond >= t.manyStored)}; ${n0(many.deliveriesPerSecond)} deliveries/s (>= ${n0(t.manyDeliveries)}) -> ${verdict(many.deliveriesPerSecond >= t.manyDeliveries)}; lost, duplicated, bad signatures -> ${ok(many) ? "none" : "SOME"}`,
      );
    }
    const again = r.scenarios.find((s) => s.label.includes("held"));
    if (r.held && again && one) {
      const h = r.held;
      const ratio = Math.min(again.storedPerSecond / one.storedPerSecond, again.deliveredPerSecond / one.deliveredPerSecond);
      const worstRead = Math.max(...h.reads.map((x) => x.p50));
      out.push(
        `${database}: ${n0(h.held)} held: made in ${h.fillSeconds.toFixed(1)} s (target < 60) -> ${verdict(h.fillSeconds < 60 && h.heldRows >= h.held)}; GET /v1/outbox?hold_reason= p50 at most ${worstRead.toFixed(1)} ms (< 20) -> ${verdict(worstRead < 20)}; server idle CPU ${h.idleAfter.server.toFixed(1)}% of a core (< 2%) -> ${verdict(h.idleAfter.server < 2)}; 1 webhook with them held: ${(ratio * 100).toFixed(0)}% of the rates without (unchanged: within this machine's noise), lag p99 ${ms(again.lagP99)} ms, backlog ${again.backlogSeconds.toFixed(1)} s`,
      );
    }
  }
  const pg = rows.find((x) => x.database === "postgres")?.r.scenarios;
  const lite = rows.find((x) => x.database === "pglite")?.r.scenarios;
  if (pg && lite) {
    const pairs = lite.map((s, i) => [s, pg[i]] as const).filter(([, p]) => p);
    const shares = pairs.map(([s, p]) => `${s.label}: stored ${((s.storedPerSecond / p!.storedPerSecond) * 100).toFixed(0)}%, delivered ${((s.deliveredPerSecond / p!.deliveredPerSecond) * 100).toFixed(0)}%`);
    out.push(`pglite against postgres (target: at least 50%): ${shares.join("; ")}`);
  }
  return out;
}

import { sql } from "../db";
import { processSingleton } from "../kernel/singleton";

// A line past EXACT_UP_TO would cost a count of every row per request: its counts are kept in
// this process and counted again in the background once REFRESH_MS old.

const EXACT_UP_TO = 10_000;
const REFRESH_MS = 5_000;
const STALE_MS = 30_000;

/** Held items by hold reason, and `turn`: due pending items waiting for their line's pace or provider. */
export type QueuedCounts = Record<string, number>;

interface Kept {
  at: number;
  counts: QueuedCounts;
  refreshing: boolean;
}

const kept = processSingleton("queued-counts", () => new Map<string, Kept>());

async function count(lineId: string, now: number, limit: number | null): Promise<{ counts: QueuedCounts; capped: boolean }> {
  // The ("lineId", status, id) index, chosen thanks to migration outbox_line_status_statistics.
  const cap = limit === null ? "" : ` ORDER BY id LIMIT ${limit}`;
  const rows = await sql<{ reason: string; n: number }>(
    `SELECT reason, count(*)::int AS n FROM (
       (SELECT COALESCE("holdReason", 'scheduled') AS reason FROM "OutboxItem" WHERE "lineId" = $1 AND status = 'held'${cap})
       UNION ALL
       (SELECT 'turn' FROM "OutboxItem" WHERE "lineId" = $1 AND status = 'pending' AND "availableAt" <= $2${cap})) q
     GROUP BY 1`,
    [lineId, new Date(now)],
  );
  const counts: QueuedCounts = Object.fromEntries(rows.map((r) => [r.reason, r.n]));
  const held = rows.filter((r) => r.reason !== "turn").reduce((s, r) => s + r.n, 0);
  return { counts, capped: limit !== null && (held >= limit || (counts.turn ?? 0) >= limit) };
}

async function countAll(lineId: string, now: number): Promise<QueuedCounts> {
  const { counts } = await count(lineId, now, null);
  kept.set(lineId, { at: now, counts, refreshing: false });
  return counts;
}

export async function queuedCounts(lineId: string, now = Date.now()): Promise<QueuedCounts> {
  const k = kept.get(lineId);
  if (k && now - k.at < STALE_MS) {
    if (now - k.at >= REFRESH_MS && !k.refreshing) {
      k.refreshing = true;
      void countAll(lineId, Date.now()).catch(() => (k.refreshing = false));
    }
    return k.counts;
  }
  const exact = await count(lineId, now, EXACT_UP_TO);
  if (!exact.capped) {
    kept.delete(lineId);
    return exact.counts;
  }
  return countAll(lineId, now);
}

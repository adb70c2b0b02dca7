import { sql } from "../db";
import { processSingleton } from "../kernel/singleton";

// What waits on a line, counted for GET /v1/capacity: held items by reason, and due items
// waiting their turn on a provider line (its pace, or its provider). Counted exactly up to
// EXACT_UP_TO of each; a line past that (100,000 scheduled for next month) would cost a count
// of every row per request, so its counts are kept in this process and counted again in the
// background once they are REFRESH_MS old: they are then at most a few seconds stale.

/** Counts exact up to this many held items (and as many waiting their turn) on a line. */
const EXACT_UP_TO = 10_000;
/** A large line's counts are counted again (in the background) once this old. */
const REFRESH_MS = 5_000;
/** Past this age they are not served: the request counts them itself. */
const STALE_MS = 30_000;

/** Held items by hold reason, and `turn`: due pending items (on a provider line: waiting for its pace or provider). */
export type QueuedCounts = Record<string, number>;

interface Kept {
  at: number;
  counts: QueuedCounts;
  refreshing: boolean;
}

const kept = processSingleton("queued-counts", () => new Map<string, Kept>());

async function count(lineId: string, now: number, limit: number | null): Promise<{ counts: QueuedCounts; capped: boolean }> {
  // Read through the ("lineId", status, id) index: the planner chooses it once the (lineId,
  // status) statistics (migration outbox_line_status_statistics) tell it how few of a line's
  // rows are held; without them it expected every line to hold a share of every held row, and
  // read the whole table for a line that holds none (34-48 ms).
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

/** What waits on line `lineId` now (see the file's comment for how fresh a large line's counts are). */
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

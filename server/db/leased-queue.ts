import { sql } from "./index";

// Rows that workers claim with a lease: outbox items and webhook deliveries. A claim marks due
// rows as taken (FOR UPDATE SKIP LOCKED, so instances never take the same row), counts the
// attempt and sets when the lease runs out; a worker that dies leaves its rows to the
// expired-lease sweep, a worker that stops hands them back at once.

/**
 * How long a claim holds its rows: longer than an attempt's deadline (a webhook's 15 s
 * response, a simulated send) plus recording it. Provider lines lengthen theirs past the
 * provider's own send timeout (server/outbox/serial.ts).
 */
export const LEASE_MS = 30_000;

export interface LeasedQueueSpec {
  /** The table ("OutboxItem", "WebhookDelivery"). */
  table: string;
  /** The status of a claimed row ("claimed", "delivering"); a due row is 'pending'. */
  claimedStatus: string;
  /** The column that says when a pending row is due. */
  dueColumn: string;
  /** What else a released row forgets or keeps (SQL SET items). */
  onRelease?: string;
  /** The statuses a due row may have to be claimed (default pending; outbox items also held, once due). */
  claimable?: readonly string[];
}

/** Which claimed rows to hand back. */
export type Release = { expiredBefore: Date } | { all: true } | { ids: string[] } | { claimedBy: string };

export interface Claim {
  /** A WITH clause's body for the candidates to use (without WITH). */
  with?: string;
  /** SELECT id ... of the rows to claim, ending FOR UPDATE SKIP LOCKED where several may race. $1 is the lease end. */
  candidates: string;
  /** More SET items of the claim (e.g. `"claimedBy" = $2`). */
  set?: string;
  /** $2 onwards. */
  params: unknown[];
  now?: Date;
  leaseMs?: number;
}

export function leasedQueue<Row>(spec: LeasedQueueSpec) {
  const table = `"${spec.table}"`;
  const statuses = spec.claimable ?? ["pending"];
  const claimable = `status IN (${statuses.map((s) => `'${s}'`).join(", ")})`;
  return {
    /** Claims the candidate rows that are still pending; returns them as claimed. */
    claim(c: Claim): Promise<Row[]> {
      const lease = new Date((c.now ?? new Date()).getTime() + (c.leaseMs ?? LEASE_MS));
      return sql<Row>(
        `${c.with ? `WITH ${c.with} ` : ""}UPDATE ${table} SET status = '${spec.claimedStatus}', "leaseExpiresAt" = $1, attempts = attempts + 1${c.set ? `, ${c.set}` : ""}
         WHERE id IN (${c.candidates}) AND ${claimable}
         RETURNING *`,
        [lease, ...c.params],
      );
    },

    /** Hands claimed rows back to pending; returns how many. */
    async release(which: Release): Promise<number> {
      const [where, params]: [string, unknown[]] =
        "expiredBefore" in which
          ? [`"leaseExpiresAt" < $1`, [which.expiredBefore]]
          : "ids" in which
            ? [`id = ANY($1::text[])`, [which.ids]]
            : "claimedBy" in which
              ? [`"claimedBy" = $1`, [which.claimedBy]]
              : ["true", []];
      if ("ids" in which && !which.ids.length) return 0;
      const rows = await sql(
        `UPDATE ${table} SET status = 'pending', "leaseExpiresAt" = NULL${spec.onRelease ? `, ${spec.onRelease}` : ""}
         WHERE status = '${spec.claimedStatus}' AND ${where} RETURNING 1`,
        params,
      );
      return rows.length;
    },

    /**
     * When the next claimable row is due, if any; `join` and `where` narrow the rows (alias t).
     * One minimum per status, each the first entry of the (status, due) index: a minimum over
     * `status IN (...)` reads every row of those statuses, and 100,000 held rows made the
     * runner's idle round cost 20-90 ms a second.
     */
    async nextDue(narrow: { join?: string; where?: string } = {}): Promise<Date | null> {
      const mins = statuses.map(
        (s) => `(SELECT min(t."${spec.dueColumn}") FROM ${table} t ${narrow.join ?? ""} WHERE t.status = '${s}'${narrow.where ? ` AND ${narrow.where}` : ""})`,
      );
      const [row] = await sql<{ at: Date | null }>(`SELECT ${mins.length > 1 ? `LEAST(${mins.join(", ")})` : mins[0]} AS at`);
      return row?.at ?? null;
    },
  };
}

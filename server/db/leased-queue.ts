import { sql } from "./index";

/** Longer than an attempt's deadline (a webhook's 15 s) plus recording it; provider lines lengthen theirs. */
export const LEASE_MS = 30_000;

export interface LeasedQueueSpec {
  table: string;
  claimedStatus: string;
  dueColumn: string;
  onRelease?: string;
  claimable?: readonly string[];
}

export type Release = { expiredBefore: Date } | { all: true } | { ids: string[] } | { claimedBy: string };

export interface Claim {
  with?: string;
  /** SELECT id ... FOR UPDATE SKIP LOCKED where several may race; $1 is the lease end. */
  candidates: string;
  set?: string;
  params: unknown[];
  now?: Date;
  leaseMs?: number;
}

export function leasedQueue<Row>(spec: LeasedQueueSpec) {
  const table = `"${spec.table}"`;
  const statuses = spec.claimable ?? ["pending"];
  const claimable = `status IN (${statuses.map((s) => `'${s}'`).join(", ")})`;
  return {
    claim(c: Claim): Promise<Row[]> {
      const lease = new Date((c.now ?? new Date()).getTime() + (c.leaseMs ?? LEASE_MS));
      return sql<Row>(
        `${c.with ? `WITH ${c.with} ` : ""}UPDATE ${table} SET status = '${spec.claimedStatus}', "leaseExpiresAt" = $1, attempts = attempts + 1${c.set ? `, ${c.set}` : ""}
         WHERE id IN (${c.candidates}) AND ${claimable}
         RETURNING *`,
        [lease, ...c.params],
      );
    },

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

    // One minimum per status, each the first entry of the (status, due) index: a minimum over
    // `status IN (...)` reads every row, and 100,000 held rows cost the idle round 20-90 ms a second.
    async nextDue(narrow: { join?: string; where?: string } = {}): Promise<Date | null> {
      const mins = statuses.map(
        (s) => `(SELECT min(t."${spec.dueColumn}") FROM ${table} t ${narrow.join ?? ""} WHERE t.status = '${s}'${narrow.where ? ` AND ${narrow.where}` : ""})`,
      );
      const [row] = await sql<{ at: Date | null }>(`SELECT ${mins.length > 1 ? `LEAST(${mins.join(", ")})` : mins[0]} AS at`);
      return row?.at ?? null;
    },
  };
}

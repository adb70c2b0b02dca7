import { getDb } from "../../db";
import { processSingleton } from "../../kernel/singleton";
import { windowStart, type WindowState } from "./rate-limit";

// Each app instance leases a batch of tokens from the shared fixed-window counter with one atomic increment and spends
// them locally. Grants never overlap, so all instances together admit at most `limit` per window; batches shrink to one
// token as the quota runs low, so little of it sits unused in other instances.

const MAX_BATCH = 100;

interface Lease {
  windowStart: number;
  available: number;
  /** The counter's value (tokens granted to all instances) after our last lease. */
  globalGranted: number;
  /** Set when a lease came back empty: the window is spent for this limit. */
  exhaustedAt: number | null;
  pending: Promise<void> | null;
}

export function batchSize(limit: number, globalGranted: number): number {
  const remaining = limit - globalGranted;
  return Math.max(1, Math.min(MAX_BATCH, Math.floor(remaining / 20)));
}

async function lease(bucket: string, state: Lease, limit: number, windowMs: number): Promise<void> {
  const batch = batchSize(limit, state.globalGranted);
  const db = await getDb();
  const start = new Date(state.windowStart);
  const rows = await db.$queryRaw<{ count: number }[]>`
    INSERT INTO "RateCounter" (bucket, "windowStart", count, "expiresAt")
    VALUES (${bucket}, ${start}, ${batch}, ${new Date(state.windowStart + windowMs)})
    ON CONFLICT (bucket, "windowStart") DO UPDATE SET count = "RateCounter".count + ${batch}
    RETURNING count`;
  const after = Number(rows[0]?.count ?? batch);
  const before = after - batch;
  const granted = Math.max(0, Math.min(batch, limit - before));
  state.available += granted;
  state.globalGranted = Math.min(after, limit);
  if (granted === 0) state.exhaustedAt = limit;
}

/** Tests make several to act as instances. */
export class QuotaLeaser {
  private readonly leases = new Map<string, Lease>();

  async consume(bucket: string, limit: number, windowMs: number, now = Date.now()): Promise<WindowState> {
    const start = windowStart(now, windowMs);
    let state = this.leases.get(bucket);
    if (!state || state.windowStart !== start) {
      state = { windowStart: start, available: 0, globalGranted: 0, exhaustedAt: null, pending: null };
      this.leases.set(bucket, state);
      if (this.leases.size > 50_000) {
        for (const [k, v] of this.leases) if (v.windowStart !== start) this.leases.delete(k);
      }
    }
    const s = state;
    // A raised limit (key updated) may allow more; a spent window otherwise stays spent.
    if (s.exhaustedAt !== null && limit > s.exhaustedAt) s.exhaustedAt = null;
    while (s.available === 0 && s.exhaustedAt === null) {
      s.pending ??= lease(bucket, s, limit, windowMs).finally(() => {
        s.pending = null;
      });
      await s.pending;
    }
    const resetAt = start + windowMs;
    if (s.available === 0) return { count: limit + 1, limit, remaining: 0, resetAt, allowed: false };
    s.available--;
    const used = s.globalGranted - s.available;
    return { count: used, limit, remaining: Math.max(0, limit - used), resetAt, allowed: true };
  }
}

const processLeaser = processSingleton("quota-leaser", () => new QuotaLeaser());

export const consume = (bucket: string, limit: number, windowMs: number, now = Date.now()) =>
  processLeaser.consume(bucket, limit, windowMs, now);

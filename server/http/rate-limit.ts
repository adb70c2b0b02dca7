import { getDb } from "../db";

// Fixed-window counters in the database: one atomic upsert per call, so every app instance on
// the same PostgreSQL shares one count. Used for the hourly API limit and the sandbox quota.

export interface WindowState {
  count: number;
  limit: number;
  remaining: number;
  /** Unix ms when the window ends. */
  resetAt: number;
  allowed: boolean;
}

export function windowStart(now: number, windowMs: number): number {
  return Math.floor(now / windowMs) * windowMs;
}

/** Adds `amount` to the bucket's current window and reports the new state. */
export async function hit(bucket: string, limit: number, windowMs: number, amount = 1, now = Date.now()): Promise<WindowState> {
  const db = await getDb();
  const start = windowStart(now, windowMs);
  const resetAt = start + windowMs;
  const rows = await db.$queryRaw<{ count: number }[]>`
    INSERT INTO "RateCounter" (bucket, "windowStart", count, "expiresAt")
    VALUES (${bucket}, ${new Date(start)}, ${amount}, ${new Date(resetAt)})
    ON CONFLICT (bucket, "windowStart") DO UPDATE SET count = "RateCounter".count + ${amount}
    RETURNING count`;
  const count = Number(rows[0]?.count ?? amount);
  if (Math.random() < 0.001) void sweep();
  return { count, limit, remaining: Math.max(0, limit - count), resetAt, allowed: count <= limit };
}

/** Reads the bucket's current window without changing it. */
export async function peek(bucket: string, limit: number, windowMs: number, now = Date.now()): Promise<WindowState> {
  const db = await getDb();
  const start = windowStart(now, windowMs);
  const row = await db.rateCounter.findUnique({
    where: { bucket_windowStart: { bucket, windowStart: new Date(start) } },
    select: { count: true },
  });
  const count = row?.count ?? 0;
  return { count, limit, remaining: Math.max(0, limit - count), resetAt: start + windowMs, allowed: count < limit };
}

async function sweep(): Promise<void> {
  const db = await getDb();
  await db.rateCounter.deleteMany({ where: { expiresAt: { lt: new Date() } } }).catch(() => undefined);
}

import { getDb } from "../../db";

// Fixed-window counters in the database: one atomic upsert per call, so every app instance on
// the same PostgreSQL shares one count. Used for the hourly API limit and the sandbox quota.

export interface WindowState {
  count: number;
  limit: number;
  remaining: number;
  resetAt: number;
  allowed: boolean;
}

export function windowStart(now: number, windowMs: number): number {
  return Math.floor(now / windowMs) * windowMs;
}

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

// Judged against a sliding window (the previous window's count weighted by its overlap, plus the current one): a fixed
// window lets a client spend its budget just before a boundary and again just after it. For sign-in and sign-up.
export async function slidingHit(bucket: string, limit: number, windowMs: number, amount = 1, now = Date.now()): Promise<WindowState> {
  const [current, previous] = await Promise.all([hit(bucket, limit, windowMs, amount, now), peek(bucket, limit, windowMs, now - windowMs)]);
  const start = windowStart(now, windowMs);
  const overlap = 1 - (now - start) / windowMs;
  const count = Math.ceil(previous.count * overlap) + current.count;
  // The next attempt (which counts too) fits once enough of the previous window has slid out,
  // or at the latest when the current window ends.
  const room = limit - current.count - amount;
  const resetAt = count > limit && room >= 0 && previous.count > 0
    ? Math.min(current.resetAt, start + Math.ceil(windowMs * (1 - room / previous.count)))
    : current.resetAt;
  return { count, limit, remaining: Math.max(0, limit - count), resetAt: Math.max(resetAt, now + 1000), allowed: count <= limit };
}

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

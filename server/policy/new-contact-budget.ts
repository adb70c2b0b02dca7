import { type Query, sql, sqlTransaction } from "../db";
import type { SendPolicy } from "./line-send-policy";
import { processSingleton } from "../kernel/singleton";

// Each opening is a ContactOpening row (this file is its one writer), reserved at the claim of the
// send that opens it under a per-line lock, so instances racing for the last slot never both win.

export const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

export interface Window {
  used: number;
  limit: number | null;
  remaining: number | null;
  resets_at: number | null;
}

export interface BudgetUse {
  hour: Window;
  day: Window;
  /** Null when a limit is 0. */
  next_slot_at: number | null;
}

function windowOf(openings: number[], spanMs: number, limit: number | null, now: number): { w: Window; freeAt: number | null } {
  const inside = openings.filter((t) => t > now - spanMs);
  const used = inside.length;
  const w: Window = { used, limit, remaining: limit === null ? null : Math.max(0, limit - used), resets_at: used ? inside[0]! + spanMs : null };
  if (limit === null || used < limit) return { w, freeAt: now };
  if (limit === 0) return { w, freeAt: null };
  // A slot frees when the (used - limit + 1)-th oldest opening leaves the window.
  return { w, freeAt: inside[used - limit]! + spanMs };
}

export function budgetUse(openings: number[], policy: Pick<SendPolicy, "new_contacts_per_hour" | "new_contacts_per_day">, now: number): BudgetUse {
  const hour = windowOf(openings, HOUR_MS, policy.new_contacts_per_hour, now);
  const day = windowOf(openings, DAY_MS, policy.new_contacts_per_day, now);
  const next = hour.freeAt === null || day.freeAt === null ? null : Math.max(hour.freeAt, day.freeAt);
  return { hour: hour.w, day: day.w, next_slot_at: next };
}

async function openingsOf(query: Query, lineId: string, now: number): Promise<number[]> {
  const rows = await query<{ at: Date }>(
    `SELECT "openedAt" AS at FROM "ContactOpening" WHERE "lineId" = $1 AND "openedAt" > $2 ORDER BY "openedAt"`,
    [lineId, new Date(now - DAY_MS)],
  );
  return rows.map((r) => new Date(r.at).getTime());
}

export async function lineBudgetUse(lineId: string, policy: SendPolicy, now = Date.now()): Promise<BudgetUse> {
  return budgetUse(await openingsOf(sql, lineId, now), policy, now);
}

// Chats known to need no slot, so steady sends to the same contacts ask the database nothing; they
// age out so that a chat's history removed (an account's data deleted) is seen within minutes.
const known = processSingleton("known-conversations", () => new Map<string, number>());
const KNOWN_FOR_MS = 10 * 60_000;
const KNOWN_MAX = 50_000;

/** The chats that need no slot: their line exchanged a message with them, or an earlier send opened them. */
export async function knownConversations(chats: { lineId: string; chatId: string }[], now = Date.now()): Promise<Set<string>> {
  const out = new Set<string>();
  const ask = new Map<string, string>();
  for (const c of chats) {
    const at = known.get(`${c.lineId}:${c.chatId}`);
    if (at !== undefined && now - at < KNOWN_FOR_MS) out.add(c.chatId);
    else ask.set(c.chatId, c.lineId);
  }
  if (!ask.size) return out;
  const rows = await sql<{ chatId: string; messaged: boolean; opened: boolean }>(
    `SELECT * FROM (
       SELECT c.chat AS "chatId", EXISTS (SELECT 1 FROM "Message" WHERE "chatId" = c.chat) AS messaged,
              EXISTS (SELECT 1 FROM "ContactOpening" WHERE "lineId" = c.line AND "chatId" = c.chat) AS opened
       FROM unnest($1::text[], $2::text[]) AS c(line, chat)) k
     WHERE messaged OR opened`,
    [[...ask.values()], [...ask.keys()]],
  );
  if (known.size > KNOWN_MAX) known.clear();
  for (const r of rows) {
    out.add(r.chatId);
    // Only a message makes it known for good: an opening is given back when its send fails.
    if (r.messaged) known.set(`${ask.get(r.chatId)}:${r.chatId}`, now);
  }
  return out;
}

/** `retryAt` null: only a policy change frees a slot. */
export async function reserveOpening(
  lineId: string,
  chatId: string,
  outboxId: string,
  policy: SendPolicy,
  now = Date.now(),
): Promise<{ taken: true } | { taken: false; retryAt: number | null }> {
  return sqlTransaction(async (query) => {
    await query(`SELECT pg_advisory_xact_lock(hashtext($1))`, [`opening:${lineId}`]);
    const use = budgetUse(await openingsOf(query, lineId, now), policy, now);
    if (use.next_slot_at !== now) return { taken: false, retryAt: use.next_slot_at };
    await query(
      `INSERT INTO "ContactOpening" ("lineId", "chatId", "outboxId", "openedAt") VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
      [lineId, chatId, outboxId, new Date(now)],
    );
    return { taken: true };
  });
}

export async function releaseOpening(query: Query, outboxId: string): Promise<void> {
  await query(`DELETE FROM "ContactOpening" WHERE "outboxId" = $1`, [outboxId]);
}

export async function forgetOldOpenings(now = Date.now()): Promise<number> {
  const rows = await sql(`DELETE FROM "ContactOpening" WHERE "openedAt" < $1 RETURNING 1`, [new Date(now - DAY_MS)]);
  return rows.length;
}

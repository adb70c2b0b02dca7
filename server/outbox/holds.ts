import { sql } from "../db";
import { findLine } from "../db/line-cache";
import type { Line, OutboxItem } from "../generated/prisma/client";
import { log } from "../kernel/log";
import { knownConversations, reserveOpening } from "./budgets";
import { MessagePayload } from "./payloads";
import { quietState } from "../kernel/quiet-hours";
import { budgetsApply, mayHold, policyOf, type SendPolicy } from "../kernel/send-policy";
import { failClaimed, outboxEvent } from "./queue";
import { routeService } from "./fallback";
import { unitOfWork } from "../write/unit";
import { NEVER } from "./enqueue";

// Holds: a pending item that may not go yet. It is stored with status 'held' (the API shows
// `pending` with `hold_reason` and `not_before`: clients parse status as a strict enum) and its
// due time in availableAt, so the claims' index on (status, availableAt) finds it when it is
// due and never looks at it before: 100,000 items held for next month cost nothing today.
//
// A scheduled send is held from the start. The line's policy is applied at the claim (the
// policy step, before anything is sent): inside quiet hours or over a new-contact budget, the
// claimed item goes back to held with the time it may go, its attempt not counted.

/** Every reason an item may wait, as the API names them. */
export const HOLD_REASONS = ["scheduled", "quiet_hours", "new_contact_budget", "line_rate", "line_unavailable", "approval"] as const;
export type HoldReason = (typeof HOLD_REASONS)[number];


/** During quiet hours a reply still goes to a contact who wrote this recently. */
const QUIET_HOURS_REPLY_MS = 30 * 60_000;

/** How far ahead a send may be scheduled. */
export const MAX_SCHEDULE_MS = 365 * 24 * 3_600_000;

type Decision = { go: true } | { go: false; reason: HoldReason; until: Date };

/** Of these chats, the ones whose contact wrote recently (a reply may go in quiet hours). One statement for a batch. */
async function recentWriters(chatIds: string[], now: number): Promise<Set<string>> {
  if (!chatIds.length) return new Set();
  const rows = await sql<{ chatId: string }>(
    `SELECT c.chat AS "chatId" FROM unnest($1::text[]) AS c(chat)
     WHERE EXISTS (SELECT 1 FROM "Message" WHERE "chatId" = c.chat AND "isFromMe" = false AND "sentAt" > $2)`,
    [chatIds, new Date(now - QUIET_HOURS_REPLY_MS)],
  );
  return new Set(rows.map((r) => r.chatId));
}

interface Judged {
  item: OutboxItem;
  line: Line;
  policy: SendPolicy;
  chatId: string;
  quiet: { active: boolean; until: number | null } | null;
}

/** What the batch's decisions need from the database, in one statement each (not one per item). */
async function batchFacts(judged: Judged[], now: number): Promise<{ wrote: Set<string>; known: Set<string> }> {
  const quietChats = judged.filter((j) => j.quiet?.active).map((j) => j.chatId);
  const budgeted = judged.filter((j) => budgetsApply(j.policy));
  const [wrote, known] = await Promise.all([
    recentWriters([...new Set(quietChats)], now),
    knownConversations(budgeted.map((j) => ({ lineId: j.line.id, chatId: j.chatId }))),
  ]);
  return { wrote, known };
}

async function decide(j: Judged, facts: { wrote: Set<string>; known: Set<string> }, now: number): Promise<Decision> {
  if (j.quiet?.active && !facts.wrote.has(j.chatId)) return { go: false, reason: "quiet_hours", until: new Date(j.quiet.until ?? now) };
  if (budgetsApply(j.policy) && !facts.known.has(j.chatId)) {
    const slot = await reserveOpening(j.line.id, j.chatId, j.item.id, j.policy, now);
    if (!slot.taken) return { go: false, reason: "new_contact_budget", until: slot.retryAt === null ? NEVER : new Date(slot.retryAt) };
    facts.known.add(j.chatId); // a second send to the chat in this batch needs no slot of its own
  }
  return { go: true };
}

/** Puts a claimed item back on hold until `until`; its attempt is not counted. */
async function holdBack(item: OutboxItem, reason: HoldReason, until: Date): Promise<void> {
  await sql(
    `UPDATE "OutboxItem" SET status = 'held', "holdReason" = $2, "availableAt" = $3, attempts = GREATEST(0, attempts - 1),
       "claimedBy" = NULL, "leaseExpiresAt" = NULL
     WHERE id = $1 AND status = 'claimed' AND "claimedBy" IS NOT DISTINCT FROM $4`,
    [item.id, reason, until, item.claimedBy],
  );
}

/**
 * The policy step, between the claim and the send: the claimed items that may go now. The
 * others are held again until they may (quiet hours' end, a budget slot). Only messages wait:
 * reactions, typing and receipts answer what the contact did and go at once. A line whose
 * policy cannot hold anything, and whose messages go by one service, costs nothing here.
 */
export async function admit(items: OutboxItem[], now = Date.now()): Promise<OutboxItem[]> {
  const verdicts: (OutboxItem | null)[] = items.map(() => null);
  const judged: (Judged & { at: number })[] = [];
  const routed: { at: number; line: Line }[] = [];
  for (const [at, item] of items.entries()) {
    if (item.kind !== "message") {
      verdicts[at] = item;
      continue;
    }
    try {
      const line = await findLine(item.lineId); // cached
      const policy = line ? policyOf(line) : null;
      if (!line || !policy) verdicts[at] = item;
      else if (!mayHold(policy)) routed.push({ at, line });
      else {
        const quiet = policy.quiet_hours ? quietState(policy.quiet_hours, now) : null;
        judged.push({ at, item, line, policy, chatId: MessagePayload.parse(item.payload).chat_id, quiet });
      }
    } catch (err) {
      await policyUnreadable(item, err, now);
    }
  }
  if (judged.length) {
    try {
      const facts = await batchFacts(judged, now);
      for (const j of judged) {
        try {
          const decision = await decide(j, facts, now);
          if (decision.go) routed.push({ at: j.at, line: j.line });
          else await holdBack(j.item, decision.reason, decision.until);
        } catch (err) {
          await policyUnreadable(j.item, err, now);
        }
      }
    } catch (err) {
      for (const j of judged) await policyUnreadable(j.item, err, now);
    }
  }
  // Then by which service, and so from which line (SMS fallback).
  for (const { at, line } of routed) {
    const item = items[at]!;
    try {
      const route = await routeService(item, line, now);
      if (route.go) verdicts[at] = item;
      else if (route.reason) await failClaimed(item, route.reason);
    } catch (err) {
      await policyUnreadable(item, err, now);
    }
  }
  return verdicts.filter((v): v is OutboxItem => v !== null);
}

/** The policy could not be read (the database hiccuped): the item waits a little, never goes unchecked. */
async function policyUnreadable(item: OutboxItem, err: unknown, now: number): Promise<void> {
  log().error({ err, outbox_id: item.id }, "applying the send policy failed");
  await holdBack(item, "line_unavailable", new Date(now + 5_000)).catch(() => undefined);
}

/**
 * Items held by the line's policy go back to being due, to be judged again by the new policy
 * at their claim (a policy change, a line reconnecting).
 */
export async function reconsiderHolds(lineId: string, now = new Date()): Promise<number> {
  const rows = await sql(
    `UPDATE "OutboxItem" SET "availableAt" = $2
     WHERE "lineId" = $1 AND status = 'held' AND "holdReason" IN ('quiet_hours', 'new_contact_budget') AND "availableAt" > $2 RETURNING 1`,
    [lineId, now],
  );
  return rows.length;
}

/**
 * Cancels a pending (or held) item: it ends failed with error 'canceled'. Null when it was no
 * longer pending (a claim won), or when the owner's approval released it to go now: that
 * decision was taken, so a cancel racing it (an approve, a reject and a cancel of one held send)
 * leaves one winner. One conditional UPDATE, so this holds across instances too (PostgreSQL
 * re-reads the row a concurrent decision changed before it matches it). An approved send that
 * waits again (its send_at, quiet hours, a budget) is held, and may be canceled.
 */
export async function cancelPending(id: string, now = new Date()): Promise<OutboxItem | null> {
  return unitOfWork(async (unit) => {
    const rows = await unit.query<OutboxItem>(
      `UPDATE "OutboxItem" SET status = 'failed', error = 'canceled', "canceledAt" = $2, "completedAt" = $2, "holdReason" = NULL
       WHERE id = $1 AND (status = 'held' OR (status = 'pending' AND "reviewedAt" IS NULL)) RETURNING *`,
      [id, now],
    );
    const item = rows[0];
    // The dashboard hears of it; no message.failed webhook: the owner's own decision is no delivery failure.
    if (item?.chatId) unit.live([outboxEvent(item, item.chatId, "failed")]);
    return item ?? null;
  });
}

/**
 * Holds a pending item until `at` (reschedule); null when it was no longer pending. An item
 * waiting for approval keeps waiting: only the time it asks for once approved moves.
 */
export async function schedulePending(id: string, at: Date): Promise<OutboxItem | null> {
  const rows = await sql<OutboxItem>(
    `UPDATE "OutboxItem" SET "sendAt" = $2,
       status = 'held',
       "holdReason" = CASE WHEN "holdReason" = 'approval' AND status = 'held' THEN 'approval' ELSE 'scheduled' END,
       "availableAt" = CASE WHEN "holdReason" = 'approval' AND status = 'held' THEN "availableAt" ELSE $2 END
     WHERE id = $1 AND status IN ('pending', 'held') RETURNING *`,
    [id, at],
  );
  return rows[0] ?? null;
}

/** Held items that come due within `withinMs` (an engine that runs each item on its own wakes them). */
export async function heldDueSoon(withinMs: number, limit = 1_000, now = Date.now()): Promise<{ id: string; lineId: string }[]> {
  return sql<{ id: string; lineId: string }>(
    `SELECT id, "lineId" FROM "OutboxItem" WHERE status = 'held' AND "availableAt" <= $1 ORDER BY "availableAt", id LIMIT $2`,
    [new Date(now + withinMs), limit],
  );
}

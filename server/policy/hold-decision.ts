import { sql } from "../db";
import type { Line, OutboxItem } from "../generated/prisma/client";
import { type HoldReason, NEVER } from "./hold-reasons";
import { budgetsApply, type SendPolicy } from "./line-send-policy";
import { knownConversations, reserveOpening } from "./new-contact-budget";
import { type QuietState, quietState } from "./quiet-hours";

/** During quiet hours a reply still goes to a contact who wrote this recently. */
const QUIET_HOURS_REPLY_MS = 30 * 60_000;

export interface ClaimedMessage {
  item: OutboxItem;
  line: Line;
  policy: SendPolicy;
  chatId: string;
}

export type HoldDecision = { go: true } | { go: false; reason: HoldReason; until: Date } | { error: unknown };

type Judged = ClaimedMessage & { at: number; quiet: QuietState | null };
type Facts = { wrote: Set<string>; known: Set<string> };

async function recentWriters(chatIds: string[], now: number): Promise<Set<string>> {
  if (!chatIds.length) return new Set();
  const rows = await sql<{ chatId: string }>(
    `SELECT c.chat AS "chatId" FROM unnest($1::text[]) AS c(chat)
     WHERE EXISTS (SELECT 1 FROM "Message" WHERE "chatId" = c.chat AND "isFromMe" = false AND "sentAt" > $2)`,
    [chatIds, new Date(now - QUIET_HOURS_REPLY_MS)],
  );
  return new Set(rows.map((r) => r.chatId));
}

async function batchFacts(judged: Judged[], now: number): Promise<Facts> {
  const quietChats = judged.filter((j) => j.quiet?.active).map((j) => j.chatId);
  const budgeted = judged.filter((j) => budgetsApply(j.policy));
  const [wrote, known] = await Promise.all([
    recentWriters([...new Set(quietChats)], now),
    knownConversations(budgeted.map((j) => ({ lineId: j.line.id, chatId: j.chatId }))),
  ]);
  return { wrote, known };
}

async function decide(j: Judged, facts: Facts, now: number): Promise<HoldDecision> {
  if (j.quiet?.active && !facts.wrote.has(j.chatId)) return { go: false, reason: "quiet_hours", until: new Date(j.quiet.until ?? now) };
  if (budgetsApply(j.policy) && !facts.known.has(j.chatId)) {
    const slot = await reserveOpening(j.line.id, j.chatId, j.item.id, j.policy, now);
    if (!slot.taken) return { go: false, reason: "new_contact_budget", until: slot.retryAt === null ? NEVER : new Date(slot.retryAt) };
    facts.known.add(j.chatId); // a second send to the chat in this batch needs no slot of its own
  }
  return { go: true };
}

/**
 * Quiet hours and new-contact budgets for claimed messages, oldest first (budget slots go to the
 * oldest sends), with one statement per question for the whole batch. A decision that could not
 * be made is an `error`: the message must wait, never go unchecked.
 */
export async function decideHolds(messages: ClaimedMessage[], now: number): Promise<HoldDecision[]> {
  const decisions: HoldDecision[] = [];
  const judged: Judged[] = [];
  for (const [at, m] of messages.entries()) {
    try {
      judged.push({ ...m, at, quiet: m.policy.quiet_hours ? quietState(m.policy.quiet_hours, now) : null });
    } catch (error) {
      decisions[at] = { error };
    }
  }
  let facts: Facts;
  try {
    facts = await batchFacts(judged, now);
  } catch (error) {
    for (const j of judged) decisions[j.at] = { error };
    return decisions;
  }
  for (const j of judged) {
    try {
      decisions[j.at] = await decide(j, facts, now);
    } catch (error) {
      decisions[j.at] = { error };
    }
  }
  return decisions;
}

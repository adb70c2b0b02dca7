import { type Query, sql } from "../db";
import { findLine } from "../db/line-cache";
import type { Line, OutboxItem } from "../generated/prisma/client";
import { log } from "../kernel/log";
import { platformForLine } from "../platform/connection";
import type { ServiceName } from "../platform/types";
import { checkChat, checkRecipientName, type GuardedChat, type GuardrailColumns, guardrailsOf, type Sender } from "./key-guardrails";
import { checkReplyLimit } from "./key-send-limits";
import { checkContactFirst, policyOf } from "./line-send-policy";

// Which service and which line a message goes by. The SMS goes only once the iMessage send is
// proven not sent; server/outbox/sms-fallback-moves.ts hands items back and moves them.

const REACHABILITY_TTL_MS = 7 * 24 * 3_600_000;

export interface Recipient {
  to: string;
  is_group: boolean;
}

/** Whether a message might go by either service, before its payload is read (this runs per send). */
export function mayFallBack(item: Pick<OutboxItem, "kind" | "poolId">, line: Pick<Line, "service">): boolean {
  return item.kind === "message" && line.service !== "sms" && (line.service === "auto" || !!item.poolId);
}

function fallbackMode(item: Pick<OutboxItem, "kind" | "poolId">, line: Pick<Line, "service">, recipient: Recipient): "same-line" | "pool" | null {
  if (!mayFallBack(item, line) || recipient.is_group) return null;
  return line.service === "auto" ? "same-line" : "pool";
}

async function knownReachability(lineId: string, handle: string, now: number): Promise<boolean | null> {
  const rows = await sql<{ imessage: boolean; checkedAt: Date }>(`SELECT imessage, "checkedAt" FROM "Reachability" WHERE "lineId" = $1 AND handle = $2`, [lineId, handle]);
  const row = rows[0];
  return row && now - new Date(row.checkedAt).getTime() < REACHABILITY_TTL_MS ? row.imessage : null;
}

async function noteReachability(lineId: string, handle: string, imessage: boolean, now = new Date()): Promise<void> {
  await sql(
    `INSERT INTO "Reachability" ("lineId", handle, imessage, "checkedAt") VALUES ($1, $2, $3, $4)
     ON CONFLICT ("lineId", handle) DO UPDATE SET imessage = EXCLUDED.imessage, "checkedAt" = EXCLUDED."checkedAt"`,
    [lineId, handle, imessage, now],
  );
}

async function reachable(line: Line, handle: string, now: number): Promise<boolean | null> {
  const known = await knownReachability(line.id, handle, now);
  if (known !== null) return known;
  let platform;
  try {
    platform = platformForLine(line);
  } catch {
    return null;
  }
  if (!platform.iMessageReachable) return null;
  const checked = await platform.iMessageReachable(handle).catch((err: unknown) => {
    log().warn({ err, line_id: line.id }, "the provider's iMessage availability check failed");
    return null;
  });
  if (checked !== null) await noteReachability(line.id, handle, checked);
  return checked;
}

export type ServiceDecision = "as-is" | "sms" | "pool-sms";

/** At the claim: by its line's own service, as SMS from the same line, or from an SMS line of its pool. */
export async function decideService(item: OutboxItem, line: Line, recipient: Recipient, now = Date.now()): Promise<ServiceDecision> {
  const mode = fallbackMode(item, line, recipient);
  // An attempt that may have sent by iMessage is reconciled first, by the path that made it.
  if (!mode || item.unknownSince) return "as-is";
  if (!item.fallback && (await reachable(line, recipient.to, now)) !== false) return "as-is";
  return mode === "same-line" ? "sms" : "pool-sms";
}

export function sendService(item: OutboxItem, line: Line, recipient: Recipient): ServiceName | undefined {
  if (line.service === "sms" && item.fallback) return "sms";
  return fallbackMode(item, line, recipient) ? (item.fallback ? "sms" : "imessage") : undefined;
}

/** What a send's answer teaches of the contact; true when a message refused as not on iMessage must go again as SMS now. */
export async function learnFromSend(
  item: OutboxItem,
  line: Line,
  recipient: Recipient,
  result: { ok: boolean; service?: ServiceName; notIMessage?: boolean },
): Promise<boolean> {
  const mode = fallbackMode(item, line, recipient);
  if (!mode && !result.notIMessage) return false;
  if (result.ok) {
    if (mode && result.service === "imessage") await noteReachability(line.id, recipient.to, true);
    return false;
  }
  if (!result.notIMessage) return false;
  await noteReachability(line.id, recipient.to, false);
  return mode !== null && !item.fallback;
}

async function poolSmsLines(poolId: string, accountId: string): Promise<Line[]> {
  const rows = await sql<{ lineId: string }>(
    `SELECT pl."lineId" FROM "PoolLine" pl JOIN "Line" l ON l.id = pl."lineId"
     WHERE pl."poolId" = $1 AND l."accountId" = $2 AND l.service = 'sms' AND l."isActive"
     ORDER BY (l.status = 'disconnected'), pl."addedAt"`,
    [poolId, accountId],
  );
  const lines = await Promise.all(rows.map((r) => findLine(r.lineId)));
  return lines.filter((l): l is Line => l !== null);
}

async function senderOf(item: OutboxItem): Promise<Sender | null> {
  if (!item.apiKeyId) return { keyId: null, lineIds: null, guardrails: null };
  const [key] = await sql<GuardrailColumns & { lineRestricted: boolean; lineIds: string[] }>(
    `SELECT "lineRestricted", "lineIds", "allowTo", "requireApproval", "maxSendsPerChatWithoutReply", "maxSendsPerDay"
     FROM "ApiKey" WHERE id = $1 AND "accountId" = $2`,
    [item.apiKeyId, item.accountId],
  );
  return key ? { keyId: item.apiKeyId, lineIds: key.lineRestricted ? new Set(key.lineIds) : null, guardrails: guardrailsOf(key) } : null;
}

export const noFallbackLine = (item: Pick<OutboxItem, "poolId">, to: string, reasons: string[]): string =>
  `no_fallback_line: ${to} cannot receive iMessage, and no SMS line of pool ${item.poolId} may send this message instead. ${reasons.join(" ")}`;

/** The pool's SMS lines the key that made the item may use (connected ones first), or the item's error. */
export async function poolSmsCandidates(item: OutboxItem, to: string): Promise<{ sender: Sender; lines: Line[]; hidden: number } | string> {
  const sender = await senderOf(item);
  if (!sender) return noFallbackLine(item, to, ["The API key that made the send no longer exists."]);
  const all = await poolSmsLines(item.poolId!, item.accountId);
  if (!all.length) return noFallbackLine(item, to, ["The pool has no active SMS line."]);
  const lines = all.filter((l) => !sender.lineIds || sender.lineIds.has(l.id));
  return { sender, lines, hidden: all.length - lines.length };
}

/** The checks of a new send from `line` before its chat with the contact is opened (`found`: null when there is none). */
export function checkOpening(sender: Sender, line: Line, found: { isGroup: boolean; hasReceivedInbound: boolean } | null, to: string): void {
  if (policyOf(line).contact_first) checkContactFirst(line, found, to);
  else if (!found) checkRecipientName(sender, to);
}

export async function checkChatSend(query: Query, sender: Sender, kind: string, chat: GuardedChat): Promise<void> {
  checkChat(sender, chat);
  await checkReplyLimit(query, sender, kind, chat.id);
}

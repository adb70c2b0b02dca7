import { randomUUID } from "node:crypto";
import { config } from "../kernel/config";
import { getDb } from "../db";
import { LEASE_MS, leasedQueue } from "../db/leased-queue";
import type { Line, OutboxItem } from "../generated/prisma/client";
import type { WebhookEventData } from "../webhooks/fanout";
import { serialProviderNames } from "../platform/connection";
import { PROVIDER_NAMES } from "../platform/registry";
import { findLine } from "../db/line-cache";
import type { LiveEvent } from "../events/live";
import { unitOfWork } from "../write/unit";
import { releaseOpening } from "../policy/new-contact-budget";
import { MessagePayload, OutboxTarget } from "./payloads";

// pending -> claimed (leased) -> sent | failed, or back to pending later. The outbox ID is the
// platform's idempotency key, so a retried claim of an item it already accepted never sends twice.

export { LEASE_MS };
const MAX_BACKOFF_MS = 60_000;

export const workerId = `${process.pid}-${randomUUID().slice(0, 8)}`;

function backoffMs(attempt: number): number {
  const base = Math.min(MAX_BACKOFF_MS, 500 * 2 ** Math.max(0, attempt - 1));
  return Math.round(base * (0.8 + Math.random() * 0.4));
}

/** A claim handed back before its attempt finished may have sent: the provider is asked first. */
const queue = leasedQueue<OutboxItem>({
  table: "OutboxItem",
  claimedStatus: "claimed",
  dueColumn: "availableAt",
  onRelease: `"claimedBy" = NULL, "unknownSince" = COALESCE("unknownSince", "attemptStartedAt")`,
  claimable: ["pending", "held"],
});

/** A held item's send window starts at its claim ($3). In an UPDATE's SET, `status` is still the old value. */
const CLAIM_SET = `"attemptStartedAt" = $3, "releasedAt" = CASE WHEN status = 'held' THEN $3 ELSE "releasedAt" END, "holdReason" = NULL`;

export function outboxEvent(
  item: Pick<OutboxItem, "id" | "accountId" | "lineId" | "apiKeyId">,
  chatId: string,
  status: "pending" | "sent" | "failed",
): LiveEvent {
  return { type: "outbox.status", accountId: item.accountId, lineId: item.lineId, chatId, outboxId: item.id, apiKeyId: item.apiKeyId, status };
}

const SERIAL_PROVIDERS = serialProviderNames(PROVIDER_NAMES);

/** Lines whose provider takes sends in any order (simulated); provider lines go one at a time (serial.ts). */
export async function claimDue(limit: number, now = new Date()): Promise<OutboxItem[]> {
  // One ordered range of the (status, availableAt) index per status, never `status IN (...)`.
  const due = (status: string) => `SELECT id, "availableAt" FROM "OutboxItem" WHERE status = '${status}' AND "availableAt" <= $3
         AND "lineId" NOT IN (SELECT id FROM "Line" WHERE platform = ANY($5::text[]))
       ORDER BY "availableAt", id LIMIT $4 FOR UPDATE SKIP LOCKED`;
  const rows = await queue.claim({
    with: `due_pending AS (${due("pending")}), due_held AS (${due("held")})`,
    set: `"claimedBy" = $2, ${CLAIM_SET}`,
    candidates: `SELECT id FROM (SELECT * FROM due_pending UNION ALL SELECT * FROM due_held) due ORDER BY "availableAt", id LIMIT $4`,
    params: [workerId, now, limit, SERIAL_PROVIDERS],
    now,
  });
  // RETURNING follows no order; budget slots go to the oldest sends.
  return rows.sort((a, b) => a.availableAt.getTime() - b.availableAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

export async function claimOne(id: string, claimedBy: string, now = new Date()): Promise<OutboxItem | null> {
  const rows = await queue.claim({
    set: `"claimedBy" = $2, ${CLAIM_SET}`,
    candidates: `SELECT id FROM "OutboxItem" WHERE id = $4 AND "availableAt" <= $3`,
    params: [claimedBy, now, id],
    now,
  });
  return rows[0] ?? null;
}

export const releaseExpiredLeases = (now = new Date()): Promise<number> => queue.release({ expiredBefore: now });

export const releaseOwnClaims = (): Promise<number> => queue.release({ claimedBy: workerId });

/** Only for a process that owns the database alone (embedded PGlite), at start. */
export const releaseAllClaims = (): Promise<number> => queue.release({ all: true });

export const nextDueAt = (): Promise<Date | null> => queue.nextDue();

async function fail(item: OutboxItem, reason: string): Promise<void> {
  const completedAt = new Date();
  const line = item.kind === "message" ? await findLine(item.lineId) : null; // outside: PGlite has one connection
  const target = OutboxTarget.safeParse(item.payload);
  await unitOfWork(async (unit) => {
    const rows = await unit.query(
      `UPDATE "OutboxItem" SET status = 'failed', error = $1, "completedAt" = $2, "leaseExpiresAt" = NULL
       WHERE id = $3 AND status = 'claimed' AND "claimedBy" IS NOT DISTINCT FROM $4 RETURNING 1`,
      [reason, completedAt, item.id, item.claimedBy],
    );
    if (!rows.length) return;
    if (target.success) unit.live([outboxEvent(item, target.data.chat_id, "failed")]);
    if (item.kind !== "message") return;
    await releaseOpening(unit.query, item.id);
    await unit.fanOut([failedEvent(item, line, reason, completedAt)]);
  });
}

export function failedEvent(item: OutboxItem, line: Line | null, reason: string, completedAt: Date): WebhookEventData {
  const p = MessagePayload.parse(item.payload);
  const data = {
    object: "outbox_item",
    outbox_id: item.id,
    line_id: item.lineId,
    line_handle: line?.handle ?? null,
    chat_id: p.chat_id,
    to: p.to,
    error: reason,
    attempts: item.attempts,
    failed_at: completedAt.getTime(),
  };
  return { accountId: item.accountId, lineId: item.lineId, event: "message.failed", data };
}

export interface RetryOptions {
  unknown?: boolean;
  /** Waits for the provider (up to the send window) instead of using up attempts. */
  waitForProvider?: boolean;
  retryAfterMs?: number;
}

export const failClaimed = (item: OutboxItem, reason: string): Promise<void> => fail(item, reason);

export async function retryLater(item: OutboxItem, reason: string, options: RetryOptions = {}): Promise<void> {
  const waiting = options.unknown || options.waitForProvider;
  const windowMs = config().PROVIDER_SEND_WINDOW_SECONDS * 1000;
  if (waiting && Date.now() - (item.releasedAt ?? item.createdAt).getTime() > windowMs) {
    const unsure = options.unknown || item.unknownSince ? "; the provider never confirmed whether it was sent" : "";
    await fail(item, `${reason}; gave up after ${Math.round(windowMs / 60_000)} minutes of waiting for the provider${unsure}`);
    return;
  }
  if (!waiting && item.attempts >= item.maxAttempts) {
    await fail(item, `${reason}; gave up after ${item.attempts} attempts`);
    return;
  }
  const db = await getDb();
  const delay = Math.max(backoffMs(Math.min(item.attempts, 8)), Math.min(options.retryAfterMs ?? 0, MAX_BACKOFF_MS));
  await db.outboxItem.updateMany({
    where: { id: item.id, status: "claimed", claimedBy: item.claimedBy },
    data: {
      status: "pending",
      error: reason,
      availableAt: new Date(Date.now() + delay),
      leaseExpiresAt: null,
      claimedBy: null,
      // Once unknown, unknown until the provider is asked; a clean refusal proves nothing was sent.
      unknownSince: options.unknown ? (item.unknownSince ?? item.attemptStartedAt ?? new Date()) : item.unknownSince,
    },
  });
}

/** Items due for a while: their event was lost, or their lease expired. */
export async function overduePending(olderThanMs: number, limit = 1_000, now = Date.now()): Promise<{ id: string; lineId: string; attempts: number }[]> {
  const db = await getDb();
  return db.outboxItem.findMany({
    where: { status: { in: ["pending", "held"] }, availableAt: { lt: new Date(now - olderThanMs) } },
    orderBy: { availableAt: "asc" },
    take: limit,
    select: { id: true, lineId: true, attempts: true },
  });
}

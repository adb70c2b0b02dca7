import { randomUUID } from "node:crypto";
import { notifyChange } from "../cache/changes";
import { getDb, type Prisma } from "../db";
import type { Line, OutboxItem } from "../generated/prisma/client";
import { newId } from "../ids";
import { platformFor } from "../platform/simulated";
import type { SendResult } from "../platform/types";
import { MessagePayload, type OutboxKind, ReactionPayload, ReceiptPayload, TypingPayload } from "./payloads";

// The outbox state machine: pending -> claimed (with a lease) -> sent | failed, or back to
// pending with a later available_at on a transient error. A claim whose lease expires (a
// crashed worker) returns to pending. The outbox ID is the platform's idempotency key, so a
// retried claim of an item the platform already accepted never sends twice.

export const LEASE_MS = 30_000;
const MAX_BACKOFF_MS = 60_000;

export const workerId = `${process.pid}-${randomUUID().slice(0, 8)}`;

/** Delay before retry n (1-based): 0.5 s doubling, at most a minute, with ±20% jitter. */
export function backoffMs(attempt: number): number {
  const base = Math.min(MAX_BACKOFF_MS, 500 * 2 ** Math.max(0, attempt - 1));
  return Math.round(base * (0.8 + Math.random() * 0.4));
}

/** Atomically claims up to `limit` due pending items for this worker. */
export async function claimDue(limit: number, now = new Date()): Promise<OutboxItem[]> {
  const db = await getDb();
  const lease = new Date(now.getTime() + LEASE_MS);
  return db.$queryRaw<OutboxItem[]>`
    UPDATE "OutboxItem" SET status = 'claimed', "leaseExpiresAt" = ${lease}, "claimedBy" = ${workerId}, attempts = attempts + 1
    WHERE id IN (
      SELECT id FROM "OutboxItem" WHERE status = 'pending' AND "availableAt" <= ${now}
      ORDER BY "availableAt", id LIMIT ${limit} FOR UPDATE SKIP LOCKED)
    RETURNING *`;
}

/** Returns claimed items whose lease ran out (their worker died) to pending. */
export async function releaseExpiredLeases(now = new Date()): Promise<number> {
  const db = await getDb();
  const { count } = await db.outboxItem.updateMany({
    where: { status: "claimed", leaseExpiresAt: { lt: now } },
    data: { status: "pending", leaseExpiresAt: null, claimedBy: null },
  });
  return count;
}

/**
 * Returns every claimed item to pending. Only for a process that owns the database alone
 * (embedded PGlite) at start: whatever is claimed then was claimed by a process that died.
 */
export async function releaseAllClaims(): Promise<number> {
  const db = await getDb();
  const { count } = await db.outboxItem.updateMany({
    where: { status: "claimed" },
    data: { status: "pending", leaseExpiresAt: null, claimedBy: null },
  });
  return count;
}

/** When the next pending item becomes due, if any. */
export async function nextDueAt(): Promise<Date | null> {
  const db = await getDb();
  const next = await db.outboxItem.findFirst({
    where: { status: "pending" },
    orderBy: { availableAt: "asc" },
    select: { availableAt: true },
  });
  return next?.availableAt ?? null;
}

async function fail(item: OutboxItem, reason: string): Promise<void> {
  const db = await getDb();
  await db.outboxItem.updateMany({
    where: { id: item.id, status: "claimed", claimedBy: item.claimedBy },
    data: { status: "failed", error: reason, completedAt: new Date(), leaseExpiresAt: null },
  });
}

async function retryLater(item: OutboxItem, reason: string): Promise<void> {
  if (item.attempts >= item.maxAttempts) {
    await fail(item, `${reason}; gave up after ${item.attempts} attempts`);
    return;
  }
  const db = await getDb();
  await db.outboxItem.updateMany({
    where: { id: item.id, status: "claimed", claimedBy: item.claimedBy },
    data: { status: "pending", error: reason, availableAt: new Date(Date.now() + backoffMs(item.attempts)), leaseExpiresAt: null, claimedBy: null },
  });
}

type Tx = Prisma.TransactionClient;

/** How one kind of item is sent, and what a success leaves in the database. */
interface Step {
  send(): Promise<SendResult>;
  record(tx: Tx, sent: { guid: string; sentAt: Date }): Promise<void>;
}

async function stepFor(item: OutboxItem, line: Line): Promise<Step> {
  const platform = platformFor(line.platform);
  const common = { idempotencyKey: item.id, lineHandle: line.handle };
  switch (item.kind as OutboxKind) {
    case "message": {
      const p = MessagePayload.parse(item.payload);
      const db = await getDb();
      const files = p.attachments.length ? await db.file.findMany({ where: { id: { in: p.attachments }, accountId: item.accountId } }) : [];
      return {
        send: () =>
          platform.sendMessage({
            ...common,
            to: p.to,
            isGroup: p.is_group,
            text: p.text,
            attachments: files.map((f) => ({ fileId: f.id, filename: f.filename, mimeType: f.mimeType, size: f.size })),
            replyToGuid: p.reply_to_guid,
            isAudioMessage: false,
          }),
        async record(tx, sent) {
          // Written once per outbox item even if a lease expired and the item was delivered twice.
          if (await tx.message.findUnique({ where: { outboxId: item.id }, select: { id: true } })) return;
          const messageId = newId("message");
          await tx.message.create({
            data: {
              id: messageId,
              accountId: item.accountId,
              lineId: line.id,
              chatId: p.chat_id,
              guid: sent.guid,
              sender: line.handle,
              text: p.text,
              isFromMe: true,
              isAudioMessage: null,
              service: line.service === "sms" ? "sms" : "imessage",
              replyToGuid: p.reply_to_guid,
              outboxId: item.id,
              sentAt: sent.sentAt,
            },
          });
          for (const [position, f] of files.entries()) {
            await tx.attachment.create({
              data: { id: newId("attachment"), messageId, fileId: f.id, position, filename: f.filename, mimeType: f.mimeType, size: f.size },
            });
          }
          await tx.chat.update({ where: { id: p.chat_id }, data: { lastMessageAt: sent.sentAt } });
        },
      };
    }
    case "reaction": {
      const p = ReactionPayload.parse(item.payload);
      return {
        send: () => platform.sendReaction({ ...common, to: p.to, isGroup: p.is_group, targetGuid: p.message_guid, type: p.type }),
        async record(tx, sent) {
          await tx.reaction.upsert({
            where: { messageId_sender_type: { messageId: p.message_id, sender: line.handle, type: p.type } },
            create: {
              id: newId("reaction"),
              accountId: item.accountId,
              chatId: p.chat_id,
              messageId: p.message_id,
              type: p.type,
              sender: line.handle,
              isFromMe: true,
              added: true,
              sentAt: sent.sentAt,
            },
            update: { added: true, sentAt: sent.sentAt, syncedAt: new Date() },
          });
        },
      };
    }
    case "typing": {
      const p = TypingPayload.parse(item.payload);
      return {
        send: () => platform.sendTyping({ ...common, to: p.to, isGroup: p.is_group, isTyping: p.is_typing }),
        async record(tx, sent) {
          await tx.typingIndicator.upsert({
            where: { chatId_handle: { chatId: p.chat_id, handle: line.handle } },
            create: { id: newId("typing"), chatId: p.chat_id, handle: line.handle, isTyping: p.is_typing, updatedAt: sent.sentAt },
            update: { isTyping: p.is_typing, updatedAt: sent.sentAt },
          });
        },
      };
    }
    case "receipt": {
      const p = ReceiptPayload.parse(item.payload);
      return {
        send: () => platform.sendReceipt({ ...common, to: p.to, isGroup: p.is_group }),
        async record(tx, sent) {
          await tx.readReceipt.upsert({
            where: { chatId_handle: { chatId: p.chat_id, handle: line.handle } },
            create: { id: newId("receipt"), chatId: p.chat_id, handle: line.handle, lastReadAt: sent.sentAt },
            update: { lastReadAt: sent.sentAt, syncedAt: new Date() },
          });
        },
      };
    }
    default:
      throw new Error(`unknown outbox kind ${item.kind}`);
  }
}

/** Sends one claimed item through its line's platform and records the outcome. */
export async function deliver(item: OutboxItem): Promise<void> {
  const db = await getDb();
  try {
    const line = await db.line.findUniqueOrThrow({ where: { id: item.lineId } });
    const step = await stepFor(item, line);
    const result = await step.send();
    if (!result.ok) {
      await (result.permanent ? fail(item, result.reason) : retryLater(item, result.reason));
      return;
    }
    await db.$transaction(async (tx) => {
      await step.record(tx, { guid: result.guid, sentAt: new Date(result.sentAt) });
      await tx.outboxItem.update({
        where: { id: item.id },
        data: { status: "sent", error: null, completedAt: new Date(), leaseExpiresAt: null },
      });
    });
    await notifyChange(item.accountId);
  } catch (err) {
    console.error(`[outbox] delivering ${item.id} failed unexpectedly`, err);
    await retryLater(item, "internal error while delivering").catch(() => undefined);
  }
}

import { randomUUID } from "node:crypto";
import { changedLocally, notifyChangeAtCommit } from "../cache/changes";
import { config } from "../config";
import { getDb, prismaQuery, type Query, sql, sqlTransaction, valuesList } from "../db";
import type { Attachment, File, Line, Message, OutboxItem } from "../generated/prisma/client";
import { serializeMessage } from "../serializers";
import { type FileUrlSigner, fileUrlSigner } from "../storage/signed-urls";
import { fanOut } from "../webhooks/fanout";
import { wakeWebhooks } from "../webhooks/runner";
import { batcher } from "../batcher";
import { newId } from "../ids";
import { platformFor } from "../platform/simulated";
import { findLine } from "../services/lines";
import { processSingleton } from "../singleton";
import type { SendResult } from "../platform/types";
import { type LiveEvent, livePayloads, notifyLiveAtCommit, publishLocal } from "../events/live";
import { MessagePayload, OutboxTarget, type OutboxKind, ReactionPayload, ReceiptPayload, TypingPayload } from "./payloads";

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

/**
 * Stores a pending item. Concurrent writes share one INSERT and one commit; each caller
 * returns only once its row is committed, so an accepted item is never lost. Live
 * subscribers hear of the accepted items; other instances through a NOTIFY in the same
 * statement (no extra round trip).
 */
export const addToOutbox = processSingleton("outbox-insert", () =>
  batcher<NewOutboxItem, void>(async (items) => {
    // Straight through the driver: the ORM's query compiler costs more CPU than the insert.
    const { text, params } = valuesList(
      items.map((i) => [i.id, i.accountId, i.lineId, i.apiKeyId, i.kind, JSON.stringify(i.payload), i.requestId]),
      ["", "", "", "", "", "::jsonb", ""],
    );
    const insert = `INSERT INTO "OutboxItem" (id, "accountId", "lineId", "apiKeyId", kind, payload, "requestId") VALUES ${text}`;
    const events = items.map((i) => outboxEvent(i, i.payload.chat_id, "pending"));
    const notify = livePayloads(events);
    if (notify) {
      const n = params.length;
      await sql(`WITH inserted AS (${insert} RETURNING 1) SELECT pg_notify($${n + 1}, p)::text FROM unnest($${n + 2}::text[]) AS p`, [
        ...params,
        notify.channel,
        notify.payloads,
      ]);
    } else {
      await sql(insert, params);
    }
    publishLocal(events);
    return items.map(() => undefined);
  }, { maxInFlight: oneStatementAtATimeOnPGlite }),
);

/** Embedded PGlite runs one statement at a time: merge writes that would only queue. */
function oneStatementAtATimeOnPGlite(): number {
  return config().DATABASE_URL ? Infinity : 1;
}

export interface NewOutboxItem {
  id: string;
  accountId: string;
  lineId: string;
  apiKeyId: string | null;
  kind: OutboxKind;
  /** Every kind's payload names its chat. */
  payload: { chat_id: string };
  requestId: string;
}

function outboxEvent(
  item: Pick<OutboxItem, "id" | "accountId" | "lineId">,
  chatId: string,
  status: "pending" | "sent" | "failed",
): LiveEvent {
  return { type: "outbox.status", accountId: item.accountId, lineId: item.lineId, chatId, outboxId: item.id, status };
}

/** Atomically claims up to `limit` due pending items for this worker. */
export async function claimDue(limit: number, now = new Date()): Promise<OutboxItem[]> {
  const lease = new Date(now.getTime() + LEASE_MS);
  return sql<OutboxItem>(
    `UPDATE "OutboxItem" SET status = 'claimed', "leaseExpiresAt" = $1, "claimedBy" = $2, attempts = attempts + 1
     WHERE id IN (
       SELECT id FROM "OutboxItem" WHERE status = 'pending' AND "availableAt" <= $3
       ORDER BY "availableAt", id LIMIT $4 FOR UPDATE SKIP LOCKED)
     RETURNING *`,
    [lease, workerId, now, limit],
  );
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

/** Ends an item `failed`; a failed message also tells webhooks subscribed to message.failed. */
async function fail(item: OutboxItem, reason: string): Promise<void> {
  const db = await getDb();
  const completedAt = new Date();
  const line = item.kind === "message" ? await findLine(item.lineId) : null; // outside: PGlite has one connection
  // An unreadable payload (the reason it failed, maybe) still fails; it just has no chat to announce.
  const target = OutboxTarget.safeParse(item.payload);
  const events = target.success ? [outboxEvent(item, target.data.chat_id, "failed")] : [];
  const failed = await db.$transaction(async (tx) => {
    const { count } = await tx.outboxItem.updateMany({
      where: { id: item.id, status: "claimed", claimedBy: item.claimedBy },
      data: { status: "failed", error: reason, completedAt, leaseExpiresAt: null },
    });
    if (!count) return false;
    await notifyLiveAtCommit(prismaQuery(tx), events);
    if (item.kind !== "message") return true;
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
    await fanOut(prismaQuery(tx), [{ accountId: item.accountId, lineId: item.lineId, event: "message.failed", data }]);
    return true;
  });
  if (failed) publishLocal(events);
  wakeWebhooks();
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


/** What a batch of items needs from the database: their lines and attached files. */
export interface BatchContext {
  lines: Map<string, Line>;
  files: Map<string, File>;
}

export async function loadContext(items: OutboxItem[]): Promise<BatchContext> {
  const db = await getDb();
  const lineIds = [...new Set(items.map((i) => i.lineId))];
  const fileIds = [
    ...new Set(items.flatMap((i) => (i.kind === "message" ? MessagePayload.parse(i.payload).attachments : []))),
  ];
  const [lines, files] = await Promise.all([
    Promise.all(lineIds.map((id) => findLine(id))),
    fileIds.length ? db.file.findMany({ where: { id: { in: fileIds } } }) : Promise.resolve([]),
  ]);
  return {
    lines: new Map(lines.filter((l): l is Line => l !== null).map((l) => [l.id, l])),
    files: new Map(files.map((f) => [f.id, f])),
  };
}

/** One claimed item with its parsed payload, line and files. */
type Prepared =
  | { kind: "message"; item: OutboxItem; line: Line; p: MessagePayload; files: File[] }
  | { kind: "reaction"; item: OutboxItem; line: Line; p: ReactionPayload }
  | { kind: "typing"; item: OutboxItem; line: Line; p: TypingPayload }
  | { kind: "receipt"; item: OutboxItem; line: Line; p: ReceiptPayload };

function prepare(item: OutboxItem, ctx: BatchContext): Prepared {
  const line = ctx.lines.get(item.lineId);
  if (!line) throw new Error(`line ${item.lineId} of ${item.id} no longer exists`);
  const kind = item.kind as OutboxKind;
  switch (kind) {
    case "message": {
      const p = MessagePayload.parse(item.payload);
      // Files of another account are never sent, whatever a payload says.
      const files = p.attachments.map((id) => ctx.files.get(id)).filter((f): f is File => f?.accountId === item.accountId);
      return { kind, item, line, p, files };
    }
    case "reaction":
      return { kind, item, line, p: ReactionPayload.parse(item.payload) };
    case "typing":
      return { kind, item, line, p: TypingPayload.parse(item.payload) };
    case "receipt":
      return { kind, item, line, p: ReceiptPayload.parse(item.payload) };
    default:
      throw new Error(`unknown outbox kind ${item.kind}`);
  }
}

/** Hands one item to its line's platform, the outbox ID as idempotency key. */
function send(x: Prepared): Promise<SendResult> {
  const platform = platformFor(x.line.platform);
  const common = { idempotencyKey: x.item.id, lineHandle: x.line.handle, to: x.p.to, isGroup: x.p.is_group };
  switch (x.kind) {
    case "message":
      return platform.sendMessage({
        ...common,
        text: x.p.text,
        attachments: x.files.map((f) => ({ fileId: f.id, filename: f.filename, mimeType: f.mimeType, size: f.size })),
        replyToGuid: x.p.reply_to_guid,
        isAudioMessage: x.p.is_audio_message,
      });
    case "reaction":
      return platform.sendReaction({ ...common, targetGuid: x.p.message_guid, type: x.p.type });
    case "typing":
      return platform.sendTyping({ ...common, isTyping: x.p.is_typing });
    case "receipt":
      return platform.sendReceipt(common);
  }
}

type Sent = { x: Prepared; guid: string; sentAt: Date };

/**
 * Writes the Message rows of sent messages: once per outbox item, even if one was delivered
 * twice. Returns how many webhook deliveries their events created.
 */
async function recordMessages(query: Query, sent: Sent[], url: FileUrlSigner): Promise<number> {
  const rows = sent.filter((s): s is Sent & { x: Extract<Prepared, { kind: "message" }> } => s.x.kind === "message");
  if (!rows.length) return 0;
  const ids = new Map(rows.map((r) => [r.x.item.id, newId("message")]));
  const syncedAt = new Date();
  const messages = valuesList(
    rows.map(({ x, guid, sentAt }) => [
      ids.get(x.item.id),
      x.item.accountId,
      x.line.id,
      x.p.chat_id,
      guid,
      x.line.handle,
      x.p.text,
      true,
      x.p.is_audio_message ? true : null,
      x.line.service === "sms" ? "sms" : "imessage",
      x.p.reply_to_guid,
      x.item.id,
      sentAt,
      syncedAt,
    ]),
    ["", "", "", "", "", "", "", "::boolean", "::boolean"],
  );
  const inserted = await query<{ id: string }>(
    `INSERT INTO "Message" (id, "accountId", "lineId", "chatId", guid, sender, text, "isFromMe", "isAudioMessage", service, "replyToGuid", "outboxId", "sentAt", "syncedAt")
     VALUES ${messages.text} ON CONFLICT ("outboxId") DO NOTHING RETURNING id`,
    messages.params,
  );
  const written = new Set(inserted.map((m) => m.id));
  const attachmentsOf = new Map(
    rows.map(({ x }) => {
      const messageId = ids.get(x.item.id)!;
      const list: Attachment[] = x.files.map((f, position) => ({
        id: newId("attachment"),
        messageId,
        fileId: f.id,
        position,
        filename: f.filename,
        mimeType: f.mimeType,
        size: f.size,
        transcription: null,
      }));
      return [messageId, list];
    }),
  );
  const attachments = [...attachmentsOf].flatMap(([messageId, list]) =>
    written.has(messageId) ? list.map((a) => [a.id, a.messageId, a.fileId, a.position, a.filename, a.mimeType, a.size]) : [],
  );
  if (attachments.length) {
    const values = valuesList(attachments);
    await query(`INSERT INTO "Attachment" (id, "messageId", "fileId", position, filename, "mimeType", size) VALUES ${values.text}`, values.params);
  }
  const deliveries = await fanOut(
    query,
    rows.flatMap(({ x, guid, sentAt }) => {
      const id = ids.get(x.item.id)!;
      if (!written.has(id)) return [];
      const message: Message = {
        id,
        accountId: x.item.accountId,
        lineId: x.line.id,
        chatId: x.p.chat_id,
        guid,
        sender: x.line.handle,
        text: x.p.text,
        isFromMe: true,
        isAudioMessage: x.p.is_audio_message ? true : null,
        service: x.line.service === "sms" ? "sms" : "imessage",
        replyToGuid: x.p.reply_to_guid,
        outboxId: x.item.id,
        sentAt,
        syncedAt,
      };
      const data = { ...serializeMessage({ ...message, attachments: attachmentsOf.get(id)! }, url), line_handle: x.line.handle };
      return [{ accountId: x.item.accountId, lineId: x.line.id, event: "message.sent" as const, data }];
    }),
  );
  const lastAt = new Map<string, Date>();
  for (const { x, sentAt } of rows) {
    if (!written.has(ids.get(x.item.id)!)) continue;
    const prev = lastAt.get(x.p.chat_id);
    if (!prev || prev < sentAt) lastAt.set(x.p.chat_id, sentAt);
  }
  for (const [chatId, at] of lastAt) {
    await query(`UPDATE "Chat" SET "lastMessageAt" = $1 WHERE id = $2 AND ("lastMessageAt" IS NULL OR "lastMessageAt" < $1)`, [at, chatId]);
  }
  return deliveries;
}

/** What a sent reaction, typing indicator or receipt leaves in the database. */
async function recordAction(query: Query, { x, sentAt }: Sent): Promise<void> {
  const handle = x.line.handle;
  switch (x.kind) {
    case "message":
      return;
    case "reaction":
      await query(
        `INSERT INTO "Reaction" (id, "accountId", "chatId", "messageId", type, sender, "isFromMe", added, "sentAt")
         VALUES ($1, $2, $3, $4, $5, $6, true, true, $7)
         ON CONFLICT ("messageId", sender, type) DO UPDATE SET added = true, "sentAt" = EXCLUDED."sentAt", "syncedAt" = now()`,
        [newId("reaction"), x.item.accountId, x.p.chat_id, x.p.message_id, x.p.type, handle, sentAt],
      );
      return;
    case "typing":
      await query(
        `INSERT INTO "TypingIndicator" (id, "chatId", handle, "isTyping", "updatedAt") VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT ("chatId", handle) DO UPDATE SET "isTyping" = EXCLUDED."isTyping", "updatedAt" = EXCLUDED."updatedAt"`,
        [newId("typing"), x.p.chat_id, handle, x.p.is_typing, sentAt],
      );
      return;
    case "receipt":
      await query(
        `INSERT INTO "ReadReceipt" (id, "chatId", handle, "lastReadAt") VALUES ($1, $2, $3, $4)
         ON CONFLICT ("chatId", handle) DO UPDATE SET "lastReadAt" = EXCLUDED."lastReadAt", "syncedAt" = now()`,
        [newId("receipt"), x.p.chat_id, handle, sentAt],
      );
      return;
  }
}

/**
 * Records what the platform did with each item: sent items in one transaction, straight
 * through the driver (the ORM's per-statement CPU cost dominated delivery).
 */
async function recordOutcomes(outcomes: { x: Prepared; result: SendResult }[]): Promise<void> {
  const sent: Sent[] = [];
  for (const { x, result } of outcomes) {
    if (result.ok) sent.push({ x, guid: result.guid, sentAt: new Date(result.sentAt) });
    else await (result.permanent ? fail(x.item, result.reason) : retryLater(x.item, result.reason));
  }
  if (!sent.length) return;
  const accounts = sent.map((s) => s.x.item.accountId);
  const events = sent.map(({ x }) => outboxEvent(x.item, x.p.chat_id, "sent"));
  const url = await fileUrlSigner(); // before the transaction: PGlite has one connection
  const deliveries = await sqlTransaction(async (query) => {
    const created = await recordMessages(query, sent, url);
    for (const s of sent) await recordAction(query, s);
    const ids = valuesList([sent.map((s) => s.x.item.id)]);
    await query(
      `UPDATE "OutboxItem" SET status = 'sent', error = NULL, "completedAt" = $${ids.params.length + 1}, "leaseExpiresAt" = NULL WHERE id IN ${ids.text}`,
      [...ids.params, new Date()],
    );
    await notifyChangeAtCommit(query, accounts);
    await notifyLiveAtCommit(query, events);
    return created;
  });
  changedLocally(accounts);
  publishLocal(events);
  // Only new deliveries need the sender (a wake costs it a claim and a look for the next due one).
  if (deliveries > 0) wakeWebhooks();
}

/** Sends a batch of claimed items through their lines' platforms and records the outcomes. */
export async function deliverBatch(items: OutboxItem[]): Promise<void> {
  if (!items.length) return;
  let ctx: BatchContext;
  try {
    ctx = await loadContext(items);
  } catch (err) {
    console.error("[outbox] loading a batch failed", err);
    await Promise.all(items.map((item) => retryLater(item, "internal error while delivering").catch(() => undefined)));
    return;
  }
  const outcomes: { x: Prepared; result: SendResult }[] = [];
  await Promise.all(
    items.map(async (item) => {
      try {
        const x = prepare(item, ctx);
        outcomes.push({ x, result: await send(x) });
      } catch (err) {
        console.error(`[outbox] delivering ${item.id} failed unexpectedly`, err);
        await retryLater(item, "internal error while delivering").catch(() => undefined);
      }
    }),
  );
  try {
    await recordOutcomes(outcomes);
  } catch (err) {
    // The platform accepted these; the lease expires and a retried send returns the same GUID.
    console.error("[outbox] recording a batch failed", err);
    await Promise.all(outcomes.map(({ x }) => retryLater(x.item, "internal error while recording").catch(() => undefined)));
  }
}

/** Sends one claimed item and records the outcome. */
export const deliver = (item: OutboxItem): Promise<void> => deliverBatch([item]);

// Single-item steps for an engine that runs each item as its own durable function (Inngest):
// claim, send and record are separate steps whose results are persisted between retries.

/** Claims one item by ID if it is pending and due; null when it is not (already handled, or not yet due). */
export async function claimOne(id: string, claimedBy: string, now = new Date()): Promise<OutboxItem | null> {
  const db = await getDb();
  const lease = new Date(now.getTime() + LEASE_MS);
  const rows = await db.$queryRaw<OutboxItem[]>`
    UPDATE "OutboxItem" SET status = 'claimed', "leaseExpiresAt" = ${lease}, "claimedBy" = ${claimedBy}, attempts = attempts + 1
    WHERE id = ${id} AND status = 'pending' AND "availableAt" <= ${now}
    RETURNING *`;
  return rows[0] ?? null;
}

async function preparedOne(id: string): Promise<Prepared | null> {
  const db = await getDb();
  const item = await db.outboxItem.findUnique({ where: { id } });
  if (item?.status !== "claimed") return null;
  return prepare(item, await loadContext([item]));
}

/** Sends a claimed item. Safe to repeat: the outbox ID is the platform's idempotency key. */
export async function sendOne(id: string): Promise<SendResult | null> {
  const x = await preparedOne(id);
  return x ? send(x) : null;
}

export interface ItemState {
  status: string;
  /** When a pending item is due again (ISO), after a transient failure. */
  availableAt: string | null;
}

/** Records what the platform did with a claimed item; returns where the item stands. */
export async function recordOne(id: string, result: SendResult): Promise<ItemState> {
  const x = await preparedOne(id);
  if (x) await recordOutcomes([{ x, result }]);
  const db = await getDb();
  const item = await db.outboxItem.findUniqueOrThrow({ where: { id }, select: { status: true, availableAt: true } });
  return { status: item.status, availableAt: item.status === "pending" ? item.availableAt.toISOString() : null };
}

/** Pending items due for a while (their event was lost, or their lease expired): to be sent again. */
export async function overduePending(olderThanMs: number, limit = 1_000, now = Date.now()): Promise<{ id: string; lineId: string; attempts: number }[]> {
  const db = await getDb();
  return db.outboxItem.findMany({
    where: { status: "pending", availableAt: { lt: new Date(now - olderThanMs) } },
    orderBy: { availableAt: "asc" },
    take: limit,
    select: { id: true, lineId: true, attempts: true },
  });
}

import { randomUUID } from "node:crypto";
import { changedLocally, notifyChangeAtCommit } from "../cache/changes";
import { config } from "../config";
import { log } from "../observability/log";
import { metrics } from "../observability/metrics";
import { chunkRows, getDb, prismaQuery, type Query, sql, sqlTransaction, valuesList } from "../db";
import { databaseFailure, shortCause } from "../db/errors";
import type { Attachment, Chat, File, Line, Message, OutboxItem } from "../generated/prisma/client";
import { serializeMessage } from "../serializers";
import { type FileUrlSigner, fileUrlSigner } from "../storage/signed-urls";
import { fanOut } from "../webhooks/fanout";
import { wakeWebhooks } from "../webhooks/runner";
import { batcher } from "../batcher";
import { newId } from "../ids";
import { isSerialLine, platformForLine, serialProviderNames } from "../platform/connection";
import { findProvider, PROVIDER_NAMES } from "../platform/registry";
import { CredentialsError } from "../credentials";
import { findLine } from "../services/lines";
import { noteProviderDown, noteProviderUp } from "../services/line-health";
import { processSingleton } from "../singleton";
import type { DeliveryReport, OutgoingMessage, Platform, SendResult } from "../platform/types";
import { applyReports, storeReports } from "../services/delivery-status";
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

const SERIAL_PROVIDERS = serialProviderNames(PROVIDER_NAMES);

/**
 * Atomically claims up to `limit` due pending items for this worker, on lines whose provider
 * takes sends in any order (simulated); provider lines go one at a time (claimLineHeads).
 */
export async function claimDue(limit: number, now = new Date()): Promise<OutboxItem[]> {
  const lease = new Date(now.getTime() + LEASE_MS);
  return sql<OutboxItem>(
    `UPDATE "OutboxItem" SET status = 'claimed', "leaseExpiresAt" = $1, "claimedBy" = $2, attempts = attempts + 1, "attemptStartedAt" = $3
     WHERE id IN (
       SELECT id FROM "OutboxItem" WHERE status = 'pending' AND "availableAt" <= $3
         AND "lineId" NOT IN (SELECT id FROM "Line" WHERE platform = ANY($5::text[]))
       ORDER BY "availableAt", id LIMIT $4 FOR UPDATE SKIP LOCKED)
     RETURNING *`,
    [lease, workerId, now, limit, SERIAL_PROVIDERS],
  );
}

/** Returns claimed items whose lease ran out (their worker died) to pending. */
export async function releaseExpiredLeases(now = new Date()): Promise<number> {
  // The worker died mid-attempt: whether the provider sent it is unknown until asked.
  const rows = await sql(
    `UPDATE "OutboxItem" SET status = 'pending', "leaseExpiresAt" = NULL, "claimedBy" = NULL,
       "unknownSince" = COALESCE("unknownSince", "attemptStartedAt")
     WHERE status = 'claimed' AND "leaseExpiresAt" < $1 RETURNING 1`,
    [now],
  );
  return rows.length;
}

/**
 * Returns the items this process still holds to pending at once (it is stopping). An attempt
 * that started may have reached the provider: it is reconciled before it is sent again.
 */
export async function releaseOwnClaims(): Promise<number> {
  const rows = await sql(
    `UPDATE "OutboxItem" SET status = 'pending', "leaseExpiresAt" = NULL, "claimedBy" = NULL,
       "unknownSince" = COALESCE("unknownSince", "attemptStartedAt")
     WHERE status = 'claimed' AND "claimedBy" = $1 RETURNING 1`,
    [workerId],
  );
  return rows.length;
}

/**
 * Returns every claimed item to pending. Only for a process that owns the database alone
 * (embedded PGlite) at start: whatever is claimed then was claimed by a process that died.
 */
export async function releaseAllClaims(): Promise<number> {
  const rows = await sql(
    `UPDATE "OutboxItem" SET status = 'pending', "leaseExpiresAt" = NULL, "claimedBy" = NULL,
       "unknownSince" = COALESCE("unknownSince", "attemptStartedAt")
     WHERE status = 'claimed' RETURNING 1`,
  );
  return rows.length;
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

export interface RetryOptions {
  /** The attempt may have sent: ask the provider before sending again. */
  unknown?: boolean;
  /** The provider did not answer: the item waits for it (up to the send window) instead of using up attempts. */
  waitForProvider?: boolean;
  /** The provider asked for this pause (Retry-After); the backoff is never shorter. */
  retryAfterMs?: number;
}

/** Fails an item this worker claimed, as any failure does (message.failed for messages). */
export const failClaimed = (item: OutboxItem, reason: string): Promise<void> => fail(item, reason);

async function retryLater(item: OutboxItem, reason: string, options: RetryOptions = {}): Promise<void> {
  const waiting = options.unknown || options.waitForProvider;
  const windowMs = config().PROVIDER_SEND_WINDOW_SECONDS * 1000;
  if (waiting && Date.now() - item.createdAt.getTime() > windowMs) {
    const unsure = options.unknown || item.unknownSince ? "; the provider never confirmed whether it was sent" : "";
    await fail(item, `${reason}; gave up after ${Math.round(windowMs / 60_000)} minutes of waiting for the provider${unsure}`);
    return;
  }
  if (!waiting && item.attempts >= item.maxAttempts) {
    await fail(item, `${reason}; gave up after ${item.attempts} attempts`);
    return;
  }
  const db = await getDb();
  // A provider's Retry-After is honoured up to the longest backoff (the item's window still bounds it).
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


/** What a batch of items needs from the database: their lines and attached files. */
export interface BatchContext {
  lines: Map<string, Line>;
  files: Map<string, File>;
  /** Chats of items on provider lines (their provider chat IDs). */
  chats: Map<string, Chat>;
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
  const serial = new Set(lines.filter((l): l is Line => l !== null && isSerialLine(l)).map((l) => l.id));
  const chatIds = [...new Set(items.filter((i) => serial.has(i.lineId)).map((i) => OutboxTarget.parse(i.payload).chat_id))];
  const chats = chatIds.length ? await db.chat.findMany({ where: { id: { in: chatIds } } }) : [];
  return {
    lines: new Map(lines.filter((l): l is Line => l !== null).map((l) => [l.id, l])),
    files: new Map(files.map((f) => [f.id, f])),
    chats: new Map(chats.map((c) => [c.id, c])),
  };
}

/** One claimed item with its parsed payload, line and files. */
type Prepared = (
  | { kind: "message"; item: OutboxItem; line: Line; p: MessagePayload; files: File[] }
  | { kind: "reaction"; item: OutboxItem; line: Line; p: ReactionPayload }
  | { kind: "typing"; item: OutboxItem; line: Line; p: TypingPayload }
  | { kind: "receipt"; item: OutboxItem; line: Line; p: ReceiptPayload }
) & { providerChatId: string | null };

function prepare(item: OutboxItem, ctx: BatchContext): Prepared {
  const line = ctx.lines.get(item.lineId);
  if (!line) throw new Error(`line ${item.lineId} of ${item.id} no longer exists`);
  const kind = item.kind as OutboxKind;
  const providerChatId = ctx.chats.get(OutboxTarget.parse(item.payload).chat_id)?.providerChatId ?? null;
  switch (kind) {
    case "message": {
      const p = MessagePayload.parse(item.payload);
      // Files of another account are never sent, whatever a payload says.
      const files = p.attachments.map((id) => ctx.files.get(id)).filter((f): f is File => f?.accountId === item.accountId);
      return { kind, item, line, p, files, providerChatId };
    }
    case "reaction":
      return { kind, item, line, p: ReactionPayload.parse(item.payload), providerChatId };
    case "typing":
      return { kind, item, line, p: TypingPayload.parse(item.payload), providerChatId };
    case "receipt":
      return { kind, item, line, p: ReceiptPayload.parse(item.payload), providerChatId };
    default:
      throw new Error(`unknown outbox kind ${item.kind}`);
  }
}

function outgoingMessage(x: Extract<Prepared, { kind: "message" }>): OutgoingMessage {
  return {
    ...common(x),
    text: x.p.text,
    attachments: x.files.map((f) => ({ fileId: f.id, filename: f.filename, mimeType: f.mimeType, size: f.size, storageKey: f.storageKey })),
    replyToGuid: x.p.reply_to_guid,
    isAudioMessage: x.p.is_audio_message,
  };
}

function common(x: Prepared) {
  return { idempotencyKey: x.item.id, lineHandle: x.line.handle, to: x.p.to, isGroup: x.p.is_group, providerChatId: x.providerChatId };
}

/** Hands one item to its line's platform, the outbox ID as idempotency key. */
async function send(x: Prepared): Promise<SendResult> {
  let platform: Platform;
  try {
    platform = platformForLine(x.line);
  } catch (err) {
    if (err instanceof CredentialsError) return { ok: false, permanent: false, reason: err.message, unreachable: true };
    throw err;
  }
  switch (x.kind) {
    case "message": {
      const optedOut = await optedOutAt(x.line, x.p.to);
      if (optedOut) {
        return { ok: false, permanent: true, reason: `${x.p.to} opted out of messages from ${x.line.handle} (replied STOP on ${optedOut.toISOString()}); they must reply START before this line can message them again` };
      }
      const message = outgoingMessage(x);
      if (x.item.unknownSince && platform.reconcile) {
        // An earlier attempt may have sent it: only a proven miss is sent again.
        const since = new Date(x.item.unknownSince.getTime() - RECONCILE_SLACK_MS);
        const known = await sql<{ guid: string }>(`SELECT guid FROM "Message" WHERE "chatId" = $1 AND "sentAt" >= $2`, [x.p.chat_id, since]);
        const found = await platform.reconcile(message, since.getTime(), new Set(known.map((k) => k.guid)));
        if (found.found === true) return { ok: true, guid: found.guid, sentAt: found.sentAt, service: found.service, providerChatId: found.providerChatId };
        if (found.found === null) return { ok: false, permanent: false, unknown: true, unreachable: found.unreachable, reason: found.reason };
        if (found.sentParts?.length) return platform.sendMessage(message, { sentParts: found.sentParts });
      }
      return platform.sendMessage(message);
    }
    case "reaction":
      return platform.sendReaction({ ...common(x), targetGuid: x.p.message_guid, type: x.p.type, added: x.p.added });
    case "typing":
      return platform.sendTyping({ ...common(x), isTyping: x.p.is_typing });
    case "receipt":
      return platform.sendReceipt(common(x));
  }
}

/** When the contact opted out of this provider line's messages (replied STOP), if they did and have not opted back in. */
async function optedOutAt(line: Line, to: string): Promise<Date | null> {
  if (!findProvider(line.provider)?.service) return null; // only SMS providers carry opt-outs
  const rows = await sql<{ optedOutAt: Date }>(`SELECT "optedOutAt" FROM "OptOut" WHERE "lineId" = $1 AND handle = $2`, [line.id, to]);
  return rows[0]?.optedOutAt ?? null;
}

/** The provider refused a send because the recipient opted out: later sends fail at once. */
async function recordRefusedOptOut(lineId: string, to: string): Promise<void> {
  await sql(`INSERT INTO "OptOut" ("lineId", handle) VALUES ($1, $2) ON CONFLICT DO NOTHING`, [lineId, to]).catch((err: unknown) => {
    log().error({ err, line_id: lineId }, "recording an opt-out failed");
  });
}

/** Clock difference allowed between this server and a provider's host when reconciling. */
const RECONCILE_SLACK_MS = 5_000;

type Sent = { x: Prepared; guid: string; sentAt: Date; service?: string; providerChatId?: string; segments?: number; delivery?: DeliveryReport };

/** Whether the line's provider reports delivery after accepting: its sent messages start `sent`. */
function reportsDelivery(line: Line): boolean {
  return findProvider(line.provider)?.deliveryReports === true;
}

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
    rows.map(({ x, guid, sentAt, service }) => [
      ids.get(x.item.id),
      x.item.accountId,
      x.line.id,
      x.p.chat_id,
      guid,
      x.line.handle,
      x.p.text,
      true,
      x.p.is_audio_message ? true : null,
      serviceOf({ x, service }),
      x.p.reply_to_guid,
      x.item.id,
      sentAt,
      syncedAt,
      reportsDelivery(x.line) ? "sent" : null,
    ]),
    ["", "", "", "", "", "", "", "::boolean", "::boolean"],
  );
  const inserted = await query<{ id: string }>(
    `INSERT INTO "Message" (id, "accountId", "lineId", "chatId", guid, sender, text, "isFromMe", "isAudioMessage", service, "replyToGuid", "outboxId", "sentAt", "syncedAt", "deliveryStatus")
     VALUES ${messages.text} ON CONFLICT DO NOTHING RETURNING id`,
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
  for (const chunk of chunkRows(attachments)) {
    const values = valuesList(chunk);
    await query(`INSERT INTO "Attachment" (id, "messageId", "fileId", position, filename, "mimeType", size) VALUES ${values.text}`, values.params);
  }
  const deliveries = await fanOut(
    query,
    rows.flatMap(({ x, guid, sentAt, service }) => {
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
        service: serviceOf({ x, service }),
        replyToGuid: x.p.reply_to_guid,
        outboxId: x.item.id,
        sentAt,
        syncedAt,
        deliveryStatus: reportsDelivery(x.line) ? "sent" : null,
        deliveredAt: null,
        deliveryError: null,
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
  // Delivery reports: the one the send's answer carried, and any that arrived before it did.
  const reporting = rows.filter(({ x, guid }) => reportsDelivery(x.line) && written.has(ids.get(x.item.id)!) && guid);
  if (!reporting.length) return deliveries;
  await storeReports(
    query,
    reporting.flatMap(({ x, guid, delivery }) => (delivery ? [{ lineId: x.line.id, guid, ...delivery }] : [])),
  );
  // Counts may have come before the message was recorded.
  const applied = await applyReports(query, reporting.map(({ x, guid }) => ({ lineId: x.line.id, guid })), url, { segments: true });
  return deliveries + applied.deliveries;
}

/** The service that carried a message: as the provider said, else the line's. */
function serviceOf({ x, service }: Pick<Sent, "x" | "service">): string {
  if (service === "sms" || service === "imessage") return service;
  return x.line.service === "sms" ? "sms" : "imessage";
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
         VALUES ($1, $2, $3, $4, $5, $6, true, $8, $7)
         ON CONFLICT ("messageId", sender, type) DO UPDATE SET added = EXCLUDED.added, "sentAt" = EXCLUDED."sentAt", "syncedAt" = now()`,
        [newId("reaction"), x.item.accountId, x.p.chat_id, x.p.message_id, x.p.type, handle, sentAt, x.p.added],
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
/** The send's metric and log line (IDs, provider and outcome; never the message's text). */
function noteSendOutcome(x: Prepared, result: SendResult): void {
  const outcome = result.ok ? "sent" : result.unknown ? "unknown" : result.permanent ? "failed" : "retry";
  metrics().sends.inc({ provider: x.line.provider, outcome });
  const record = { outbox_id: x.item.id, kind: x.kind, line_id: x.line.id, provider: x.line.provider, attempt: x.item.attempts, outcome };
  if (result.ok) log().info(record, "send");
  else log().warn({ ...record, reason: result.reason }, "send");
}

async function recordOutcomes(outcomes: { x: Prepared; result: SendResult }[]): Promise<void> {
  const sent: Sent[] = [];
  for (const { x, result } of outcomes) noteSendOutcome(x, result);
  for (const { x, result } of outcomes) {
    if (isSerialLine(x.line)) {
      // A provider line's health follows its calls: an answer of any kind says it is up.
      await (!result.ok && result.unreachable ? noteProviderDown(x.line.id, result.reason) : noteProviderUp(x.line.id)).catch(() => undefined);
    }
    if (result.ok) {
      sent.push({ x, guid: result.guid, sentAt: new Date(result.sentAt), service: result.service, providerChatId: result.providerChatId, segments: result.segments, delivery: result.delivery });
    } else if (result.permanent && !result.unknown) {
      if (result.optedOut && x.kind === "message") await recordRefusedOptOut(x.line.id, x.p.to);
      await fail(x.item, result.reason);
    }
    else await retryLater(x.item, result.reason, { unknown: result.unknown, waitForProvider: result.unreachable || result.unknown, retryAfterMs: result.retryAfterMs });
  }
  if (sent.length) await recordSentIsolated(sent);
}

/**
 * Records sent items together; when the database refuses the batch, each half is tried on its
 * own, down to the one item it refuses, which is quarantined: failed, with the database's
 * reason, so it never holds back the others or comes round again. A database that is down
 * refuses everything alike: that is thrown, and the claims' leases bring the items back.
 */
async function recordSentIsolated(sent: Sent[]): Promise<void> {
  try {
    await recordSent(sent);
  } catch (err) {
    if (databaseFailure(err)) throw err;
    if (sent.length > 1) {
      const half = Math.ceil(sent.length / 2);
      await recordSentIsolated(sent.slice(0, half));
      await recordSentIsolated(sent.slice(half));
      return;
    }
    const { x } = sent[0]!;
    log().error({ err, outbox_id: x.item.id }, "a sent item could not be recorded; it is quarantined");
    await fail(x.item, `the provider accepted it, but it could not be recorded: ${shortCause(err)}`);
  }
}

async function recordSent(sent: Sent[]): Promise<void> {
  const accounts = sent.map((s) => s.x.item.accountId);
  const events = sent.map(({ x }) => outboxEvent(x.item, x.p.chat_id, "sent"));
  const url = await fileUrlSigner(); // before the transaction: PGlite has one connection
  const deliveries = await sqlTransaction(async (query) => {
    const created = await recordMessages(query, sent, url);
    for (const s of sent) await recordAction(query, s);
    const ids = valuesList([sent.map((s) => s.x.item.id)]);
    await query(
      `UPDATE "OutboxItem" SET status = 'sent', error = NULL, "completedAt" = $${ids.params.length + 1}, "leaseExpiresAt" = NULL, "unknownSince" = NULL
       WHERE id IN ${ids.text} AND status IN ('pending', 'claimed')`,
      [...ids.params, new Date()],
    );
    for (const s of sent) {
      if (s.service || s.segments) await query(`UPDATE "OutboxItem" SET service = COALESCE($1, service), segments = COALESCE($2, segments) WHERE id = $3`, [s.service ?? null, s.segments ?? null, s.x.item.id]);
      // The chat's provider ID as the provider last gave it (a new chat's, or a renamed service prefix).
      if (s.providerChatId && s.providerChatId !== s.x.providerChatId) {
        await query(`UPDATE "Chat" SET "providerChatId" = $1 WHERE id = $2`, [s.providerChatId, s.x.p.chat_id]);
      }
    }
    await notifyChangeAtCommit(query, accounts);
    await notifyLiveAtCommit(query, events);
    return created;
  });
  changedLocally(accounts);
  publishLocal(events);
  // Only new deliveries need the sender (a wake costs it a claim and a look for the next due one).
  if (deliveries > 0) wakeWebhooks();
}

/**
 * Records item `id` as sent with what the provider reported (a webhook echoing our send, or
 * a send found again), whoever holds it: false when it is not waiting to be sent.
 */
export async function adoptSent(id: string, sent: { guid: string; sentAt: number; service?: "imessage" | "sms"; providerChatId?: string }): Promise<boolean> {
  const db = await getDb();
  const item = await db.outboxItem.findUnique({ where: { id } });
  if (!item || (item.status !== "pending" && item.status !== "claimed")) return false;
  const x = prepare(item, await loadContext([item]));
  await recordOutcomes([{ x, result: { ok: true, ...sent } }]);
  return true;
}

/**
 * Outbox messages on a line whose echoes may still arrive: being sent, sent with an unknown
 * outcome, or sent in the last minutes (a message sent in parts echoes each part).
 */
export async function inFlightMessages(lineId: string): Promise<{ id: string; payload: MessagePayload; fileNames: string[] }[]> {
  const items = await sql<OutboxItem>(
    `SELECT * FROM "OutboxItem" WHERE "lineId" = $1 AND kind = 'message'
       AND (status = 'claimed' OR (status = 'pending' AND "unknownSince" IS NOT NULL)
            OR (status = 'sent' AND "completedAt" > now() - interval '10 minutes')) ORDER BY id LIMIT 100`,
    [lineId],
  );
  const ctx = await loadContext(items);
  return items.map((item) => {
    const payload = MessagePayload.parse(item.payload);
    return { id: item.id, payload, fileNames: payload.attachments.map((f) => ctx.files.get(f)?.filename ?? f) };
  });
}

/** Sends a batch of claimed items through their lines' platforms and records the outcomes. */
export async function deliverBatch(items: OutboxItem[]): Promise<void> {
  if (!items.length) return;
  let ctx: BatchContext;
  try {
    ctx = await loadContext(items);
  } catch (err) {
    log().error({ err, outbox_ids: items.map((i) => i.id) }, "loading an outbox batch failed");
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
        log().error({ err, outbox_id: item.id }, "delivering failed unexpectedly");
        await retryLater(item, "internal error while delivering").catch(() => undefined);
      }
    }),
  );
  try {
    await recordOutcomes(outcomes);
  } catch (err) {
    // The platform accepted these; the lease expires and a retried send returns the same GUID.
    log().error({ err, outbox_ids: outcomes.map(({ x }) => x.item.id) }, "recording an outbox batch failed");
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
    UPDATE "OutboxItem" SET status = 'claimed', "leaseExpiresAt" = ${lease}, "claimedBy" = ${claimedBy}, attempts = attempts + 1, "attemptStartedAt" = ${now}
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

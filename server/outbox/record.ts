import { getDb, type Query, sql, valuesList } from "../db";
import { databaseFailure, shortCause } from "../db/database-failures";
import type { Line, OutboxItem } from "../generated/prisma/client";
import { newId } from "../kernel/ids";
import { log } from "../kernel/log";
import { metrics } from "../observability/metrics";
import { isSerialLine } from "../platform/connection";
import { findProvider } from "../platform/registry";
import type { DeliveryReport, SendResult } from "../platform/types";
import { applyReports, storeReports } from "../messages/delivery-status";
import { writeMessages } from "../messages/store";
import { fireAndWait } from "../kernel/signals";
import { type FileUrlSigner, fileUrlSigner } from "../storage/signed-urls";
import { type Unit, unitOfWork } from "../write/unit";
import { MessagePayload } from "./payloads";
import { learnFromSend } from "../policy/sms-fallback";
import { requeueAsSms } from "./sms-fallback-moves";
import { loadContext, type Prepared, prepare } from "./prepare";
import { failClaimed, outboxEvent, retryLater } from "./queue";

// Sent items in one transaction, straight through the driver: the ORM's per-statement CPU cost
// dominated delivery.

async function recordRefusedOptOut(lineId: string, to: string): Promise<void> {
  await sql(`INSERT INTO "OptOut" ("lineId", handle) VALUES ($1, $2) ON CONFLICT DO NOTHING`, [lineId, to]).catch((err: unknown) => {
    log().error({ err, line_id: lineId }, "recording an opt-out failed");
  });
}

type Sent = { x: Prepared; guid: string; sentAt: Date; service?: string; providerChatId?: string; segments?: number; delivery?: DeliveryReport };

function reportsDelivery(line: Line): boolean {
  return findProvider(line.provider)?.deliveryReports === true;
}

/** Once per outbox item, even if one was delivered twice; then the delivery reports that came before. */
async function recordMessages(unit: Unit, sent: Sent[], url: FileUrlSigner): Promise<void> {
  const rows = sent.filter((s): s is Sent & { x: Extract<Prepared, { kind: "message" }> } => s.x.kind === "message");
  if (!rows.length) return;
  const written = await writeMessages(
    unit,
    rows.map(({ x, guid, sentAt, service }) => ({
      accountId: x.item.accountId,
      lineId: x.line.id,
      lineHandle: x.line.handle,
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
      deliveryStatus: reportsDelivery(x.line) ? "sent" : null,
      fallback: x.item.fallback ? true : null,
      attachments: x.files.map((f) => ({ fileId: f.id, filename: f.filename, mimeType: f.mimeType, size: f.size })),
    })),
    url,
  );
  const reporting = written.map(({ index }) => rows[index]!).filter(({ x, guid }) => reportsDelivery(x.line) && guid);
  if (!reporting.length) return;
  await storeReports(
    unit,
    reporting.flatMap(({ x, guid, delivery }) => (delivery ? [{ lineId: x.line.id, guid, ...delivery }] : [])),
  );
  // Counts may have come before the message was recorded.
  await applyReports(unit, reporting.map(({ x, guid }) => ({ lineId: x.line.id, guid })), url, { segments: true });
}

function serviceOf({ x, service }: Pick<Sent, "x" | "service">): string {
  if (service === "sms" || service === "imessage") return service;
  return x.line.service === "sms" ? "sms" : "imessage";
}

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

/** Never the message's text. */
function noteSendOutcome(x: Prepared, result: SendResult): void {
  const outcome = result.ok ? "sent" : result.unknown ? "unknown" : result.permanent ? "failed" : "retry";
  metrics().sends.inc({ provider: x.line.provider, outcome });
  const record = { outbox_id: x.item.id, kind: x.kind, line_id: x.line.id, provider: x.line.provider, attempt: x.item.attempts, outcome };
  if (result.ok) log().info(record, "send");
  else log().warn({ ...record, reason: result.reason }, "send");
}

export async function recordOutcomes(outcomes: { x: Prepared; result: SendResult }[]): Promise<void> {
  const sent: Sent[] = [];
  for (const { x, result } of outcomes) noteSendOutcome(x, result);
  for (const { x, result } of outcomes) {
    if (isSerialLine(x.line)) {
      // A provider line's health follows its calls: an answer of any kind says it is up.
      const reachable = result.ok || !result.unreachable;
      await fireAndWait("provider.answered", { lineId: x.line.id, reachable, reason: reachable ? null : result.reason });
    }
    if (result.ok) {
      if (x.kind === "message") await learnFromSend(x.item, x.line, x.p, result);
      sent.push({ x, guid: result.guid, sentAt: new Date(result.sentAt), service: result.service, providerChatId: result.providerChatId, segments: result.segments, delivery: result.delivery });
    } else if (result.permanent && !result.unknown) {
      if (result.optedOut && x.kind === "message") await recordRefusedOptOut(x.line.id, x.p.to);
      if (x.kind === "message" && (await learnFromSend(x.item, x.line, x.p, result))) {
        await requeueAsSms(sql, x.item, null);
        continue;
      }
      await failClaimed(x.item, result.reason);
    }
    else await retryLater(x.item, result.reason, { unknown: result.unknown, waitForProvider: result.unreachable || result.unknown, retryAfterMs: result.retryAfterMs });
  }
  if (sent.length) await recordSentIsolated(sent);
}

/**
 * A batch the database refuses is halved down to the one item it refuses, which fails (quarantined)
 * so it never holds back the others. A database that is down is thrown: the leases bring items back.
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
    await failClaimed(x.item, `the provider accepted it, but it could not be recorded: ${shortCause(err)}`);
  }
}

async function recordSent(sent: Sent[]): Promise<void> {
  const url = await fileUrlSigner(); // before the transaction: PGlite has one connection
  await unitOfWork(async (unit) => {
    const { query } = unit;
    await recordMessages(unit, sent, url);
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
    unit.changed(sent.map((s) => s.x.item.accountId));
    unit.live(sent.map(({ x }) => outboxEvent(x.item, x.p.chat_id, "sent")));
  });
}

/** A webhook echoing our send, or a send found again, whoever holds it: false when it is not waiting to be sent. */
export async function adoptSent(id: string, sent: { guid: string; sentAt: number; service?: "imessage" | "sms"; providerChatId?: string }): Promise<boolean> {
  const db = await getDb();
  const item = await db.outboxItem.findUnique({ where: { id } });
  if (!item || (item.status !== "pending" && item.status !== "claimed")) return false;
  const x = prepare(item, await loadContext([item]));
  await recordOutcomes([{ x, result: { ok: true, ...sent } }]);
  return true;
}

/** Messages whose echoes may still arrive: a message sent in parts echoes each part. */
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

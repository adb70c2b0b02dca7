import { valuesList } from "../../db";
import type { Line, ReadReceipt, Reaction, TypingIndicator } from "../../generated/prisma/client";
import { batcher } from "../../kernel/batcher";
import { config } from "../../kernel/config";
import { ApiError } from "../../kernel/errors";
import { newId } from "../../kernel/ids";
import { processSingleton } from "../../kernel/singleton";
import type { InboundChatRow } from "../../messages/chat-rows";
import { reportKey } from "../../messages/delivery-status";
import { type NewMessage, type StoredMessage, storeInbound } from "../../messages/store";
import type { InboundEvent } from "../../platform/inbound-event";
import { discardBlob } from "../../storage/blobs";
import { type FileUrlSigner, fileUrlSigner } from "../../storage/signed-urls";
import { serializeReaction } from "../../wire/serializers";
import { type Unit, unitOfWork } from "../../write/unit";
import { type Routed, routeAccounts } from "./sandbox-routing";

// Concurrent inbound events share one unit of work: one statement per table for the batch.

export type InboundOutcome = "stored" | "duplicate" | "adopted" | "ignored";

export interface TakenIn {
  outcome: InboundOutcome;
  row?: StoredMessage | Reaction | TypingIndicator | ReadReceipt;
  /** Nothing of a refused event was written. */
  refusal?: ApiError;
}

interface Intake {
  line: Line;
  event: InboundEvent;
  /** A provider's event: it moves the line's catch-up cursor. */
  moveCursor: boolean;
}

type Of<T extends InboundEvent["type"]> = { i: number; line: Line; event: Extract<InboundEvent, { type: T }>; accountId: string };

async function run(inputs: Intake[]): Promise<TakenIn[]> {
  const url = await fileUrlSigner(); // before the transaction: PGlite has one connection
  const results: TakenIn[] = inputs.map(() => ({ outcome: "stored" }));
  await unitOfWork(async (unit) => {
    const routed = await routeAccounts(unit, inputs, results);
    const of = <T extends InboundEvent["type"]>(type: T, from: Routed[] = routed) => from.filter((r): r is Of<T> => r.event.type === type);
    const firstTime = await claimOnce(unit, [...of("reaction"), ...of("receipt")], results);
    const presence = [...of("typing"), ...of("receipt", firstTime)];
    const chats = await store(unit, of("message"), presence, of("delivery"), results, url);
    await recordOptOuts(unit, of("message").filter((r) => results[r.i]!.outcome === "stored"));
    for (const r of of("reaction", firstTime)) await react(unit, r, results);
    await writePresence(unit, presence, chats, results);
    await moveCursors(unit, [...of("message"), ...of("reaction", firstTime).filter((r) => !results[r.i]!.refusal)].filter((r) => inputs[r.i]!.moveCursor));
  });
  return results;
}

/** Only with a new message: a STOP delivered again after START must not opt the contact out again. */
async function recordOptOuts({ query }: Unit, messages: Of<"message">[]): Promise<void> {
  for (const { line, event } of messages) {
    if (!event.optOut || event.isFromMe) continue;
    const at = new Date(event.at);
    if (event.optOut === "start") {
      // Only a START newer than the STOP it answers (webhooks arrive in any order).
      await query(`DELETE FROM "OptOut" WHERE "lineId" = $1 AND handle = $2 AND "optedOutAt" <= $3`, [line.id, event.sender, at]);
    } else {
      await query(
        `INSERT INTO "OptOut" ("lineId", handle, "optedOutAt") VALUES ($1, $2, $3)
         ON CONFLICT ("lineId", handle) DO UPDATE SET "optedOutAt" = GREATEST("OptOut"."optedOutAt", EXCLUDED."optedOutAt")`,
        [line.id, event.sender, at],
      );
    }
  }
}

async function claimOnce(unit: Unit, events: (Of<"reaction"> | Of<"receipt">)[], results: TakenIn[]): Promise<Routed[]> {
  const keyed = new Map<string, number>();
  for (const r of events) {
    if (!r.event.once) continue;
    const key = `${r.line.id} ${r.event.once}`;
    if (keyed.has(key)) results[r.i]!.outcome = "duplicate";
    else keyed.set(key, r.i);
  }
  if (!keyed.size) return events.filter((r) => results[r.i]!.outcome !== "duplicate");
  const v = valuesList(events.filter((r) => r.event.once && keyed.get(`${r.line.id} ${r.event.once}`) === r.i).map((r) => [r.line.id, r.event.once]));
  const claimed = await unit.query<{ lineId: string; key: string }>(`INSERT INTO "ProviderEvent" ("lineId", key) VALUES ${v.text} ON CONFLICT DO NOTHING RETURNING "lineId", key`, v.params);
  const first = new Set(claimed.map((c) => `${c.lineId} ${c.key}`));
  for (const r of events) if (r.event.once && !first.has(`${r.line.id} ${r.event.once}`)) results[r.i]!.outcome = "duplicate";
  return events.filter((r) => results[r.i]!.outcome !== "duplicate");
}

function chatRow({ line, event, accountId }: Of<"message"> | Of<"typing"> | Of<"receipt">): InboundChatRow {
  const common = { lineId: line.id, accountId, providerChatId: null, lastMessageAt: null, received: false, existingOnly: false };
  if (event.type === "message") return { ...common, ...event.chat, lastMessageAt: new Date(event.at), received: !event.isFromMe };
  return { ...common, identifier: event.sender, service: line.service === "sms" ? "sms" : "imessage", name: null, isGroup: false, participants: [event.sender] };
}

function newMessage({ line, event, accountId }: Of<"message">): Omit<NewMessage, "chatId"> {
  const { guid, sender, text, isFromMe, isAudioMessage, service, replyToGuid, file } = event;
  const attachments = file ? [{ fileId: file.blob.id, filename: file.filename, mimeType: file.mimeType, size: file.blob.size, transcription: file.transcription, storedFile: file.blob }] : [];
  return { accountId, lineId: line.id, lineHandle: line.handle, guid, sender, text, isFromMe, isAudioMessage, service, replyToGuid, sentAt: new Date(event.at), attachments };
}

/** One message store call for the batch's chats, messages and delivery reports; returns the chat of each placed event. */
async function store(unit: Unit, messages: Of<"message">[], presence: (Of<"typing"> | Of<"receipt">)[], reports: Of<"delivery">[], results: TakenIn[], url: FileUrlSigner): Promise<Map<number, string>> {
  const guids = new Set<string>();
  const fresh = messages.filter(({ i, line, event }) => {
    const key = `${line.id} ${event.guid}`;
    if (guids.has(key)) results[i]!.outcome = "duplicate";
    guids.add(key);
    return results[i]!.outcome === "stored";
  });
  const placed = [...fresh, ...presence];
  const stored = await storeInbound(
    unit,
    {
      chats: placed.map(chatRow),
      messages: fresh.map((m, chat) => ({ ...newMessage(m), chat })),
      reports: reports.map(({ line, event }) => ({ lineId: line.id, guid: event.guid, ...event.report, segments: event.segments })),
    },
    url,
  );
  fresh.forEach(({ i }, k) => {
    const row = stored.written.get(k);
    results[i] = row ? { outcome: "stored", row } : { outcome: stored.chatIds[k] ? "duplicate" : "ignored" };
  });
  const seen = new Set<string>();
  for (const { i, line, event } of reports) {
    const key = reportKey({ lineId: line.id, guid: event.guid, status: event.report.status });
    results[i]!.outcome = stored.freshReports.has(key) && !seen.has(key) ? "stored" : "duplicate";
    seen.add(key);
  }
  return new Map(placed.flatMap((p, k) => (stored.chatIds[k] ? [[p.i, stored.chatIds[k]!]] : [])));
}

async function react(unit: Unit, { i, line, event, accountId }: Of<"reaction">, results: TakenIn[]): Promise<void> {
  const target = event.target.trim();
  const [message] = await unit.query<{ id: string; chatId: string }>(
    `SELECT id, "chatId" FROM "Message" WHERE "lineId" = $1 AND "accountId" = $2 AND ${target.startsWith("msg_") ? "id" : "guid"} = $3 LIMIT 1`,
    [line.id, accountId, target],
  );
  if (!message) {
    results[i] = { outcome: "ignored", refusal: new ApiError("message_not_found", `No message with ID or GUID '${target}' on this line.`, { param: "message_id" }) };
    return;
  }
  const [reaction] = await unit.query<Reaction>(
    `INSERT INTO "Reaction" (id, "accountId", "chatId", "messageId", type, sender, "isFromMe", added, "sentAt")
     VALUES ($1, $2, $3, $4, $5, $6, false, $7, $8)
     ON CONFLICT ("messageId", sender, type) DO UPDATE SET added = EXCLUDED.added, "sentAt" = EXCLUDED."sentAt", "syncedAt" = now()
     RETURNING *`,
    [newId("reaction"), accountId, message.chatId, message.id, event.reaction, event.sender, event.added, new Date(event.at)],
  );
  const data = { ...serializeReaction(reaction!), line_handle: line.handle };
  await unit.fanOut([{ accountId, lineId: line.id, event: reaction!.added ? "reaction.added" : "reaction.removed", data }]);
  unit.live([{ type: "chat.activity", accountId, lineId: line.id, chatId: message.chatId, kind: "reaction" }]);
  unit.changed([accountId]);
  results[i] = { outcome: "stored", row: reaction };
}

async function writePresence(unit: Unit, events: (Of<"typing"> | Of<"receipt">)[], chats: Map<number, string>, results: TakenIn[]): Promise<void> {
  for (const { i, line, event, accountId } of events) {
    const chatId = chats.get(i)!;
    const at = new Date(event.at);
    const [row] =
      event.type === "typing"
        ? await unit.query<TypingIndicator>(
            `INSERT INTO "TypingIndicator" (id, "chatId", handle, "isTyping", "updatedAt") VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT ("chatId", handle) DO UPDATE SET "isTyping" = EXCLUDED."isTyping", "updatedAt" = EXCLUDED."updatedAt" RETURNING *`,
            [newId("typing"), chatId, event.sender, event.isTyping, at],
          )
        : await unit.query<ReadReceipt>(
            `INSERT INTO "ReadReceipt" (id, "chatId", handle, "lastReadAt") VALUES ($1, $2, $3, $4)
             ON CONFLICT ("chatId", handle) DO UPDATE SET "lastReadAt" = EXCLUDED."lastReadAt", "syncedAt" = now() RETURNING *`,
            [newId("receipt"), chatId, event.sender, at],
          );
    const live = event.type === "typing" ? { kind: "typing" as const, typing: event.isTyping } : { kind: "receipt" as const };
    unit.live([{ type: "chat.activity", accountId, lineId: line.id, chatId, ...live }]);
    unit.changed([accountId]);
    results[i] = { outcome: "stored", row };
  }
}

async function moveCursors({ query }: Unit, events: { line: Line; event: InboundEvent }[]): Promise<void> {
  const newest = new Map<string, number>();
  for (const { line, event } of events) {
    if (event.type === "delivery") continue;
    newest.set(line.id, Math.max(newest.get(line.id) ?? 0, event.at));
  }
  for (const [lineId, at] of newest) {
    await query(`UPDATE "Line" SET "catchupAfter" = $2 WHERE id = $1 AND ("catchupAfter" IS NULL OR "catchupAfter" < $2)`, [lineId, new Date(at)]);
  }
}

/** Embedded PGlite runs one statement at a time: merge batches that would only queue. */
const inFlight = () => (config().DATABASE_URL ? 2 : 1);

const batch = processSingleton("inbound-take-in", () => batcher<Intake, TakenIn>(run, { maxInFlight: inFlight }));

export async function takeIn(line: Line, event: InboundEvent, moveCursor = false): Promise<TakenIn> {
  const blob = event.type === "message" ? event.file?.blob : undefined;
  let result: TakenIn | null = null;
  try {
    result = await batch({ line, event, moveCursor });
    return result;
  } finally {
    // A repeat, a refusal or a failure: no File row points at the bytes.
    if (blob && result?.outcome !== "stored") await discardBlob(blob).catch(() => {});
  }
}

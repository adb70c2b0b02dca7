import { batcher } from "../../kernel/batcher";
import { config } from "../../kernel/config";
import { type Query, valuesList } from "../../db";
import type { Line } from "../../generated/prisma/client";
import { normalizeHandle } from "../../kernel/handles";
import { newId } from "../../kernel/ids";
import { CHAT_RULE_ON_UPSERT, writeMessages } from "../../messages/store";
import type { ProviderInbound } from "../../platform/types";
import { processSingleton } from "../../kernel/singleton";
import { fileUrlSigner } from "../../storage/signed-urls";
import { unitOfWork } from "../../write/unit";

// The fast path for what most provider traffic is: a contact's message without attachments.
// Concurrent ones are merged into one unit of work (one chat upsert, the message store's one
// insert, chat move and fan-out, one notification, one cursor move) instead of about fifteen
// statements each. The
// message insert skips GUIDs the line already has (the unique constraint decides, so a
// webhook delivered twice or seen again by catch-up is stored once), and only the messages it
// actually inserted are announced. Lines that are provider lines are never the shared sandbox,
// so every message belongs to the line's own account.

type MessageEvent = Extract<ProviderInbound, { kind: "message" }>;

export interface QuickInput {
  line: Line;
  event: MessageEvent;
}

/** A contact's message that needs nothing but rows: the fast path takes it. */
export function isQuick(event: MessageEvent): boolean {
  return !event.isFromMe && event.attachments.length === 0 && !!event.text;
}

interface ChatRow {
  key: string;
  lineId: string;
  accountId: string;
  identifier: string;
  service: string;
  name: string | null;
  isGroup: boolean;
  participants: string[];
  providerChatId: string | null;
  lastMessageAt: Date;
}

/**
 * The batch's chats, created or brought up to date (participants, name, provider ID). The row
 * is written here anyway, so it takes the message store's chat rule too (CHAT_RULE_ON_UPSERT:
 * last_message_at, heard from the contact), and the store is told so (`chatsMoved`): one
 * statement and one row write per chat.
 */
async function upsertChats(query: Query, chats: ChatRow[]): Promise<Map<string, string>> {
  const sorted = [...chats].sort((a, b) => (a.key < b.key ? -1 : 1)); // one lock order for concurrent batches
  const v = valuesList(
    sorted.map((c) => [newId("chat"), c.accountId, c.lineId, c.identifier, c.service, c.name, c.isGroup, JSON.stringify(c.participants), c.providerChatId, c.lastMessageAt, true]),
    ["", "", "", "", "", "", "::boolean", "ARRAY(SELECT jsonb_array_elements_text($::jsonb))", "", "::timestamptz", "::boolean"],
  );
  const rows = await query<{ id: string; lineId: string; accountId: string; identifier: string }>(
    `INSERT INTO "Chat" (id, "accountId", "lineId", identifier, service, name, "isGroup", participants, "providerChatId", "lastMessageAt", "hasReceivedInbound")
     VALUES ${v.text}
     ON CONFLICT ("lineId", "accountId", identifier) DO UPDATE SET
       ${CHAT_RULE_ON_UPSERT},
       "providerChatId" = COALESCE(EXCLUDED."providerChatId", "Chat"."providerChatId"),
       participants = CASE WHEN "Chat"."isGroup" AND cardinality(EXCLUDED.participants) > 0 THEN EXCLUDED.participants ELSE "Chat".participants END,
       name = CASE WHEN "Chat"."isGroup" THEN COALESCE(EXCLUDED.name, "Chat".name) ELSE "Chat".name END
     RETURNING id, "lineId", "accountId", identifier`,
    v.params,
  );
  return new Map(rows.map((r) => [`${r.lineId} ${r.accountId} ${r.identifier}`, r.id]));
}

async function run(inputs: QuickInput[]): Promise<("stored" | "duplicate")[]> {
  const outcomes: ("stored" | "duplicate")[] = inputs.map(() => "duplicate");
  // A GUID twice in one batch: the first is the one.
  const first = new Map<string, number>();
  inputs.forEach((input, i) => first.has(`${input.line.id} ${input.event.guid}`) || first.set(`${input.line.id} ${input.event.guid}`, i));
  const batch = [...first.values()].map((i) => {
    const { line, event } = inputs[i]!;
    const accountId = line.accountId!;
    const sender = normalizeHandle(event.sender);
    const service = event.service ?? (line.service === "sms" ? "sms" : "imessage");
    const participants = event.group
      ? [...new Set([sender, ...event.group.participants.map(normalizeHandle)])].filter((p) => p !== line.handle)
      : [sender];
    const identifier = event.group?.id ?? sender;
    const chat: ChatRow = {
      key: `${line.id} ${accountId} ${identifier}`,
      lineId: line.id,
      accountId,
      identifier,
      service,
      name: event.group?.name ?? null,
      isGroup: !!event.group,
      participants,
      providerChatId: event.providerChatId,
      lastMessageAt: new Date(event.sentAt),
    };
    return { i, line, event, sender, service, chat, id: newId("message") };
  });
  const chats = new Map<string, ChatRow>();
  for (const { chat } of batch) {
    const known = chats.get(chat.key);
    if (!known || known.lastMessageAt < chat.lastMessageAt) chats.set(chat.key, { ...chat, providerChatId: chat.providerChatId ?? known?.providerChatId ?? null });
  }
  const url = await fileUrlSigner(); // before the transaction: PGlite has one connection
  const stored = await unitOfWork(async (unit) => {
    const chatIds = await upsertChats(unit.query, [...chats.values()]);
    const rows = batch.map((b) => ({ ...b, chatId: chatIds.get(b.chat.key)! }));
    const written = await writeMessages(
      unit,
      rows.map((r) => ({
        id: r.id,
        accountId: r.line.accountId!,
        lineId: r.line.id,
        lineHandle: r.line.handle,
        chatId: r.chatId,
        guid: r.event.guid,
        sender: r.sender,
        text: r.event.text,
        isFromMe: false,
        isAudioMessage: null,
        service: r.service,
        replyToGuid: r.event.replyToGuid,
        sentAt: new Date(r.event.sentAt),
      })),
      url,
      { chatsMoved: true },
    );
    // The catch-up cursor: the newest message taken in, per line.
    const newest = new Map<string, number>();
    for (const r of rows) newest.set(r.line.id, Math.max(newest.get(r.line.id) ?? 0, r.event.sentAt));
    for (const [lineId, at] of newest) {
      await unit.query(`UPDATE "Line" SET "catchupAfter" = $2 WHERE id = $1 AND ("catchupAfter" IS NULL OR "catchupAfter" < $2)`, [lineId, new Date(at)]);
    }
    return written.map(({ index }) => rows[index]!);
  });
  for (const r of stored) outcomes[r.i] = "stored";
  return outcomes;
}

/** Embedded PGlite runs one statement at a time: merge batches that would only queue. */
const inFlight = () => (config().DATABASE_URL ? 2 : 1);

/** Takes in a contact's plain message: "stored", or "duplicate" when the line already has its GUID. */
export const ingestQuick = processSingleton("inbound-quick", () => batcher<QuickInput, "stored" | "duplicate">(run, { maxInFlight: inFlight }));

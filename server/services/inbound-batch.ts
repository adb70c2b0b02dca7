import { batcher } from "../batcher";
import { changedLocally, notifyChangeAtCommit } from "../cache/changes";
import { config } from "../config";
import { MAX_STATEMENT_PARAMS, type Query, sqlTransaction } from "../db";
import { type LiveEvent, notifyLiveAtCommit, publishLocal } from "../events/live";
import type { Line, Message } from "../generated/prisma/client";
import { normalizeHandle } from "../handles";
import { newId } from "../ids";
import type { ProviderInbound } from "../platform/types";
import { serializeMessage } from "../serializers";
import { processSingleton } from "../singleton";
import { fileUrlSigner } from "../storage/signed-urls";
import { fanOut } from "../webhooks/fanout";
import { wakeWebhooks } from "../webhooks/runner";

// The fast path for what most provider traffic is: a contact's message without attachments.
// Concurrent ones are merged into one transaction (one chat upsert, one message insert, one
// fan-out, one notification, one cursor move) instead of about fifteen statements each. The
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
 * $n placeholders for rows of `width` values, with per-column SQL around each ("$" is the
 * placeholder). A batch (at most the batcher's 500 inputs, 11 values each) stays far under
 * MAX_STATEMENT_PARAMS; past it this throws, and the batcher splits the batch.
 */
function values(rows: unknown[][], columns: string[]): { text: string; params: unknown[] } {
  if (rows.length * columns.length > MAX_STATEMENT_PARAMS) throw new Error(`${rows.length} rows of ${columns.length} values: more than ${MAX_STATEMENT_PARAMS} parameters`);
  const params: unknown[] = [];
  const text = rows
    .map((row) => `(${row.map((v, i) => (params.push(v), columns[i]!.replace("$", () => `$${params.length}`))).join(", ")})`)
    .join(", ");
  return { text, params };
}

async function upsertChats(query: Query, chats: ChatRow[]): Promise<Map<string, string>> {
  const sorted = [...chats].sort((a, b) => (a.key < b.key ? -1 : 1)); // one lock order for concurrent batches
  const v = values(
    sorted.map((c) => [newId("chat"), c.accountId, c.lineId, c.identifier, c.service, c.name, c.isGroup, JSON.stringify(c.participants), c.providerChatId, c.lastMessageAt, true]),
    ["$", "$", "$", "$", "$", "$", "$::boolean", "ARRAY(SELECT jsonb_array_elements_text($::jsonb))", "$", "$::timestamptz", "$::boolean"],
  );
  const rows = await query<{ id: string; lineId: string; accountId: string; identifier: string }>(
    `INSERT INTO "Chat" (id, "accountId", "lineId", identifier, service, name, "isGroup", participants, "providerChatId", "lastMessageAt", "hasReceivedInbound")
     VALUES ${v.text}
     ON CONFLICT ("lineId", "accountId", identifier) DO UPDATE SET
       "hasReceivedInbound" = true,
       "lastMessageAt" = GREATEST("Chat"."lastMessageAt", EXCLUDED."lastMessageAt"),
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
  const syncedAt = new Date();
  const { stored, deliveries, events, accounts } = await sqlTransaction(async (query) => {
    const chatIds = await upsertChats(query, [...chats.values()]);
    const rows = batch.map((b) => ({ ...b, chatId: chatIds.get(b.chat.key)! }));
    const v = values(
      rows.map((r) => [r.id, r.line.accountId, r.line.id, r.chatId, r.event.guid, r.sender, r.event.text, r.service, r.event.replyToGuid, new Date(r.event.sentAt), syncedAt]),
      ["$", "$", "$", "$", "$", "$", "$", "$", "$", "$::timestamptz", "$::timestamptz"],
    );
    const inserted = await query<{ id: string }>(
      `INSERT INTO "Message" (id, "accountId", "lineId", "chatId", guid, sender, text, "isFromMe", service, "replyToGuid", "sentAt", "syncedAt")
       SELECT id, "accountId", "lineId", "chatId", guid, sender, text, false, service, "replyToGuid", "sentAt", "syncedAt"
       FROM (VALUES ${v.text}) AS m (id, "accountId", "lineId", "chatId", guid, sender, text, service, "replyToGuid", "sentAt", "syncedAt")
       ON CONFLICT ("lineId", guid) DO NOTHING RETURNING id`,
      v.params,
    );
    const fresh = new Set(inserted.map((m) => m.id));
    const stored = rows.filter((r) => fresh.has(r.id));
    const messages: Message[] = stored.map((r) => ({
      id: r.id,
      accountId: r.line.accountId!,
      lineId: r.line.id,
      chatId: r.chatId,
      guid: r.event.guid,
      sender: r.sender,
      text: r.event.text,
      isFromMe: false,
      isAudioMessage: null,
      service: r.service,
      replyToGuid: r.event.replyToGuid,
      outboxId: null,
      sentAt: new Date(r.event.sentAt),
      syncedAt,
      deliveryStatus: null,
      deliveredAt: null,
      deliveryError: null,
    }));
    const deliveries = await fanOut(
      query,
      messages.map((m, k) => ({
        accountId: m.accountId,
        lineId: m.lineId,
        event: "message.received" as const,
        data: { ...serializeMessage({ ...m, attachments: [] }, url), line_handle: stored[k]!.line.handle },
      })),
    );
    const events: LiveEvent[] = messages.map((m) => ({ type: "message.received", accountId: m.accountId, lineId: m.lineId, chatId: m.chatId, messageId: m.id }));
    const accounts = [...new Set(messages.map((m) => m.accountId))];
    await notifyLiveAtCommit(query, events);
    await notifyChangeAtCommit(query, accounts);
    // The catch-up cursor: the newest message taken in, per line.
    const newest = new Map<string, number>();
    for (const r of rows) newest.set(r.line.id, Math.max(newest.get(r.line.id) ?? 0, r.event.sentAt));
    for (const [lineId, at] of newest) {
      await query(`UPDATE "Line" SET "catchupAfter" = $2 WHERE id = $1 AND ("catchupAfter" IS NULL OR "catchupAfter" < $2)`, [lineId, new Date(at)]);
    }
    return { stored, deliveries, events, accounts };
  });
  for (const r of stored) outcomes[r.i] = "stored";
  changedLocally(accounts);
  publishLocal(events);
  if (deliveries > 0) wakeWebhooks();
  return outcomes;
}

/** Embedded PGlite runs one statement at a time: merge batches that would only queue. */
const inFlight = () => (config().DATABASE_URL ? 2 : 1);

/** Takes in a contact's plain message: "stored", or "duplicate" when the line already has its GUID. */
export const ingestQuick = processSingleton("inbound-quick", () => batcher<QuickInput, "stored" | "duplicate">(run, { maxInFlight: inFlight }));

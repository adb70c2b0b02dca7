import { chunkRows, type Query, valuesList } from "../db";
import type { Chat } from "../generated/prisma/client";
import { newId } from "../kernel/ids";

// The chat rule in its two forms (an UPDATE, an upsert's SET list): last_message_at only moves
// forward; a received message lets the line message the contact first afterwards.

const CHAT_RULE_ON_UPSERT = `"lastMessageAt" = GREATEST("Chat"."lastMessageAt", EXCLUDED."lastMessageAt"), "hasReceivedInbound" = "Chat"."hasReceivedInbound" OR EXCLUDED."hasReceivedInbound"`;

export async function moveChats(query: Query, messages: { chatId: string; sentAt: Date; isFromMe: boolean }[]): Promise<void> {
  const chats = new Map<string, { at: Date; received: boolean }>();
  for (const m of messages) {
    const chat = chats.get(m.chatId);
    if (!chat) chats.set(m.chatId, { at: m.sentAt, received: !m.isFromMe });
    else chats.set(m.chatId, { at: chat.at > m.sentAt ? chat.at : m.sentAt, received: chat.received || !m.isFromMe });
  }
  const sorted = [...chats].sort(([a], [b]) => (a < b ? -1 : 1));
  for (const chunk of chunkRows(sorted.map(([id, c]) => [id, c.at, c.received]))) {
    const v = valuesList(chunk, ["", "::timestamptz", "::boolean"]);
    await query(
      `UPDATE "Chat" c SET "lastMessageAt" = GREATEST(c."lastMessageAt", v.at), "hasReceivedInbound" = c."hasReceivedInbound" OR v.received
       FROM (VALUES ${v.text}) AS v (id, at, received)
       WHERE c.id = v.id AND (c."lastMessageAt" IS NULL OR c."lastMessageAt" < v.at OR (v.received AND NOT c."hasReceivedInbound"))`,
      v.params,
    );
  }
}

/** A one-to-one chat our side opens: a send to a new contact, or an SMS fallback moved to a pool's SMS line. */
export async function ensureDirectChat(query: Query, chat: { accountId: string; lineId: string; identifier: string; service: "imessage" | "sms" }): Promise<Chat> {
  const rows = await query<Chat>(
    `INSERT INTO "Chat" (id, "accountId", "lineId", identifier, service, "isGroup", participants)
     VALUES ($1, $2, $3, $4, $5, false, ARRAY[$4]::text[])
     ON CONFLICT ("lineId", "accountId", identifier) DO UPDATE SET identifier = EXCLUDED.identifier
     RETURNING *`,
    [newId("chat"), chat.accountId, chat.lineId, chat.identifier, chat.service],
  );
  return rows[0]!;
}

export interface InboundChatRow {
  lineId: string;
  accountId: string;
  identifier: string;
  service: string;
  name: string | null;
  isGroup: boolean;
  participants: string[];
  providerChatId: string | null;
  lastMessageAt: Date | null;
  received: boolean;
  /** Only looked up (our own message in a group): never created. */
  existingOnly: boolean;
}

const chatKey = (c: { lineId: string; accountId: string; identifier: string }) => `${c.lineId} ${c.accountId} ${c.identifier}`;

async function upsertChats(query: Query, chats: InboundChatRow[]): Promise<Map<string, string>> {
  if (!chats.length) return new Map();
  const merged = new Map<string, InboundChatRow>();
  for (const c of chats) {
    const key = chatKey(c);
    const known = merged.get(key);
    if (!known) merged.set(key, c);
    else {
      const newer = c.lastMessageAt && (!known.lastMessageAt || known.lastMessageAt < c.lastMessageAt) ? c : known;
      merged.set(key, { ...newer, received: known.received || c.received, providerChatId: newer.providerChatId ?? known.providerChatId ?? c.providerChatId });
    }
  }
  // One lock order for concurrent batches.
  const sorted = [...merged].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, c]) => c);
  const v = valuesList(
    sorted.map((c) => [newId("chat"), c.accountId, c.lineId, c.identifier, c.service, c.name, c.isGroup, JSON.stringify(c.participants), c.providerChatId, c.lastMessageAt, c.received]),
    ["", "", "", "", "", "", "::boolean", "ARRAY(SELECT jsonb_array_elements_text($::jsonb))", "", "::timestamptz", "::boolean"],
  );
  const rows = await query<{ id: string; lineId: string; accountId: string; identifier: string }>(
    `INSERT INTO "Chat" (id, "accountId", "lineId", identifier, service, name, "isGroup", participants, "providerChatId", "lastMessageAt", "hasReceivedInbound")
     VALUES ${v.text}
     ON CONFLICT ("lineId", "accountId", identifier) DO UPDATE SET
       ${CHAT_RULE_ON_UPSERT},
       "providerChatId" = COALESCE(EXCLUDED."providerChatId", "Chat"."providerChatId"),
       participants = CASE WHEN "Chat"."isGroup" AND cardinality(EXCLUDED.participants) > 0 THEN EXCLUDED.participants ELSE "Chat".participants END,
       name = CASE WHEN "Chat"."isGroup" THEN COALESCE(NULLIF(EXCLUDED.name, ''), "Chat".name) ELSE "Chat".name END
     RETURNING id, "lineId", "accountId", identifier`,
    v.params,
  );
  return new Map(rows.map((r) => [chatKey(r), r.id]));
}

async function existingChats(query: Query, keys: InboundChatRow[]): Promise<Map<string, string>> {
  if (!keys.length) return new Map();
  const v = valuesList(keys.map((k) => [k.lineId, k.accountId, k.identifier]));
  const rows = await query<{ id: string; lineId: string; accountId: string; identifier: string }>(
    `SELECT c.id, c."lineId", c."accountId", c.identifier FROM "Chat" c JOIN (VALUES ${v.text}) AS k ("lineId", "accountId", identifier)
       ON c."lineId" = k."lineId" AND c."accountId" = k."accountId" AND c.identifier = k.identifier`,
    v.params,
  );
  return new Map(rows.map((r) => [chatKey(r), r.id]));
}

/** Each chat's ID (null: an existingOnly chat we do not have); `moved`: the upsert applied the chat rule. */
export async function placeInboundChats(query: Query, chats: InboundChatRow[]): Promise<{ ids: (string | null)[]; moved: Set<string> }> {
  const upserted = await upsertChats(query, chats.filter((c) => !c.existingOnly));
  const existing = await existingChats(query, chats.filter((c) => c.existingOnly));
  const ids = chats.map((c) => (c.existingOnly ? existing : upserted).get(chatKey(c)) ?? null);
  const looked = new Set(existing.values());
  return { ids, moved: new Set([...upserted.values()].filter((id) => !looked.has(id))) };
}

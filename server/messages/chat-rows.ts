import type { Query } from "../db";
import type { Chat } from "../generated/prisma/client";
import { newId } from "../kernel/ids";

// A one-to-one chat that our side opens: a send to a contact the line never talked with (a line
// whose contact-first rule is off), or an SMS fallback moved to a pool's SMS line. Inbound
// traffic opens its chats in the inbound batch.

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

import type { Actor } from "../access/actor";
import type { Chat } from "../../generated/prisma/client";
import { unitOfWork } from "../../write/unit";
import { ApiError } from "../../kernel/errors";
import { requireIdKind } from "../access/id-params";
import { getDb } from "../../db";
import { assertLineIdAccess } from "../lines/lines";
import { serializeChat } from "../../wire/serializers";
import { actorName } from "./approvals";

// Sends by keys with any guardrail are refused with chat_paused; the owner's own still go. The send path reads a
// guarded key's chat fresh, so a pause holds at once on every instance.

async function findChat(actor: Actor, id: string): Promise<Chat> {
  requireIdKind("chat", id, "id");
  const db = await getDb();
  const chat = await db.chat.findFirst({ where: { id, accountId: actor.accountId } });
  if (!chat) throw new ApiError("chat_not_found", `No chat with ID '${id}'.`, { param: "id" });
  await assertLineIdAccess(actor, chat.lineId);
  return chat;
}

async function setPaused(actor: Actor, id: string, paused: boolean) {
  const chat = await findChat(actor, id);
  const updated = await unitOfWork(async (unit) => {
    // Pausing a paused chat keeps who paused it first and since when.
    const [row] = await unit.query<Chat>(
      paused
        ? `UPDATE "Chat" SET "pausedAt" = COALESCE("pausedAt", $2), "pausedBy" = COALESCE("pausedBy", $3) WHERE id = $1 RETURNING *`
        : `UPDATE "Chat" SET "pausedAt" = NULL, "pausedBy" = NULL WHERE id = $1 RETURNING *`,
      paused ? [chat.id, new Date(), actorName(actor)] : [chat.id],
    );
    unit.changed([chat.accountId]);
    return row ?? chat;
  });
  return serializeChat(updated);
}

export const pauseChat = (actor: Actor, id: string) => setPaused(actor, id, true);
export const resumeChat = (actor: Actor, id: string) => setPaused(actor, id, false);

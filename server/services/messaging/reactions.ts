import type { Actor } from "../access/actor";
import { getDb } from "../../db";
import { keysetDesc, type Page, toPage } from "../../wire/pagination";
import { serializeReaction } from "../../wire/serializers";
import { findMessage } from "./messages";

export async function listReactions(
  actor: Actor,
  input: { message_id: string; limit: number; cursor?: string },
): Promise<Page<ReturnType<typeof serializeReaction>>> {
  const message = await findMessage(actor, input.message_id, "message_id");
  const db = await getDb();
  const page = keysetDesc("sentAt", input.cursor);
  const rows = await db.reaction.findMany({
    where: { messageId: message.id, ...page.where },
    orderBy: page.orderBy,
    take: input.limit + 1,
  });
  return toPage(rows, input.limit, serializeReaction, (r) => [r.sentAt.getTime(), r.id]);
}

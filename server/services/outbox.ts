import type { Actor } from "../auth/actor";
import { getDb } from "../db";
import { ApiError, invalidParam } from "../errors";
import { keysetDesc, type Page, toPage } from "../http/pagination";
import { isId } from "../ids";
import { serializeOutboxItem } from "../serializers";
import { assertLineIdAccess, resolveLine, sandboxLine } from "./lines";

import { OUTBOX_STATUSES, type OutboxStatus } from "./outbox-statuses";

export { OUTBOX_STATUSES, type OutboxStatus };

export async function getOutboxItem(actor: Actor, id: string) {
  if (!isId("outbox", id)) throw invalidParam("id", `'${id}' is not a valid obx_ ID.`);
  const db = await getDb();
  const item = await db.outboxItem.findFirst({ where: { id, accountId: actor.accountId } });
  if (!item) throw new ApiError("outbox_item_not_found", `No outbox item with ID '${id}'.`, { param: "id" });
  await assertLineIdAccess(actor, item.lineId);
  return serializeOutboxItem(item);
}

export async function listOutbox(
  actor: Actor,
  input: { from?: string; status?: OutboxStatus; limit: number; cursor?: string },
): Promise<Page<ReturnType<typeof serializeOutboxItem>>> {
  const db = await getDb();
  const line = input.from ? await resolveLine(actor, input.from) : null;
  const page = keysetDesc(null, input.cursor);
  // A restricted key sees its lines and, like every key, the sandbox line.
  const lineFilter = line
    ? { lineId: line.id }
    : actor.lineIds
      ? { lineId: { in: [...actor.lineIds, (await sandboxLine()).id] } }
      : {};
  const rows = await db.outboxItem.findMany({
    where: { accountId: actor.accountId, ...lineFilter, ...(input.status ? { status: input.status } : {}), ...page.where },
    orderBy: page.orderBy,
    take: input.limit + 1,
  });
  return toPage(rows, input.limit, serializeOutboxItem, (o) => [o.id]);
}

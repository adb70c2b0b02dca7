import type { Actor } from "../access/actor";
import { getDb } from "../../db";
import { ApiError } from "../../kernel/errors";
import { keysetDesc, type Page, toPage } from "../../wire/pagination";
import { requireIdKind } from "../access/id-params";
import { serializeOutboxItem } from "../../wire/serializers";
import { assertLineIdAccess, resolveLine } from "../lines/lines";
import { whereForActor, whereOnLine } from "../lines/tenancy";

import { OUTBOX_STATUSES, type OutboxStatus } from "./outbox-statuses";

export { OUTBOX_STATUSES, type OutboxStatus };

/** An outbox item of the caller's account on a line it may use, or outbox_item_not_found. */
export async function findOutboxItem(actor: Actor, id: string) {
  requireIdKind("outbox", id, "id");
  const db = await getDb();
  const item = await db.outboxItem.findFirst({ where: { id, accountId: actor.accountId } });
  if (!item) throw new ApiError("outbox_item_not_found", `No outbox item with ID '${id}'.`, { param: "id" });
  await assertLineIdAccess(actor, item.lineId);
  return item;
}

export async function getOutboxItem(actor: Actor, id: string) {
  return serializeOutboxItem(await findOutboxItem(actor, id));
}

export async function listOutbox(
  actor: Actor,
  input: { from?: string; status?: OutboxStatus; limit: number; cursor?: string },
): Promise<Page<ReturnType<typeof serializeOutboxItem>>> {
  const db = await getDb();
  const line = input.from ? await resolveLine(actor, input.from) : null;
  const page = keysetDesc(null, input.cursor);
  const scope = line ? whereOnLine(actor, line) : await whereForActor(actor);
  const rows = await db.outboxItem.findMany({
    where: { ...scope, ...(input.status ? { status: input.status } : {}), ...page.where },
    orderBy: page.orderBy,
    take: input.limit + 1,
  });
  return toPage(rows, input.limit, serializeOutboxItem, (o) => [o.id]);
}

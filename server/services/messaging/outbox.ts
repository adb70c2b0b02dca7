import type { Actor } from "../access/actor";
import { getDb } from "../../db";
import { ApiError } from "../../kernel/errors";
import { keysetDesc, type Page, toPage } from "../../wire/pagination";
import { requireIdKind } from "../access/id-params";
import { type LineHold, serializeOutboxItem } from "../../wire/serializers";
import type { Line, OutboxItem } from "../../generated/prisma/client";
import { assertLineIdAccess, resolveLine } from "../lines/lines";
import { whereForActor, whereOnLine } from "../lines/tenancy";

import { OUTBOX_STATUSES, type OutboxStatus } from "./outbox-statuses";
import { z } from "zod";
import { cancelPending, schedulePending } from "../../outbox/held-items";
import { fire } from "../../kernel/signals";
import { sendsSerially } from "../../outbox/serial";
import { findLine } from "../../db/line-cache";
import { scheduledTime } from "./schedule";

export { OUTBOX_STATUSES, type OutboxStatus };

/** A key with guardrails reaches only the sends it made; other callers reach every send of their lines. */
function ownSends(actor: Actor): { apiKeyId?: string | null } {
  return actor.guardrails ? { apiKeyId: actor.keyId } : {};
}

export async function outboxScope(actor: Actor, line?: Pick<Line, "id"> | null) {
  return { ...(line ? whereOnLine(actor, line) : await whereForActor(actor)), ...ownSends(actor) };
}

export async function findOutboxItem(actor: Actor, id: string) {
  requireIdKind("outbox", id, "id");
  const db = await getDb();
  const item = await db.outboxItem.findFirst({ where: { id, accountId: actor.accountId, ...ownSends(actor) } });
  if (!item) throw new ApiError("outbox_item_not_found", `No outbox item with ID '${id}'.`, { param: "id" });
  await assertLineIdAccess(actor, item.lineId);
  return item;
}

export async function getOutboxItem(actor: Actor, id: string) {
  return outboxItemView(await findOutboxItem(actor, id));
}

export async function outboxItemView(item: OutboxItem) {
  return serializeOutboxItem(item, (await lineHolds([item])).get(item.id) ?? null);
}

/** Held items are pending on the wire. */
function statusWhere(status: OutboxStatus | undefined) {
  if (!status) return {};
  return { status: status === "pending" ? { in: ["pending", "held"] } : status };
}

export type StoredHoldReason = "scheduled" | "quiet_hours" | "new_contact_budget" | "approval";

/** Read from the partial indexes of held rows (migration outbox_hold_reason_lists), which need status spelled out. */
function holdWhere(reason: StoredHoldReason) {
  return { status: "held", holdReason: reason };
}

const wireStatus = (status: string) => (status === "held" ? "pending" : status);

/** Read from the line, never stored: disconnected (line_unavailable), else its pace (line_rate). */
async function lineHolds(items: OutboxItem[], now = new Date()): Promise<Map<string, LineHold>> {
  const out = new Map<string, LineHold>();
  for (const item of items) {
    if (item.status !== "pending" || item.availableAt > now) continue;
    const line = await findLine(item.lineId);
    if (!line || !sendsSerially(line.provider)) continue;
    if (line.status === "disconnected") out.set(item.id, { reason: "line_unavailable", until: null });
    else out.set(item.id, { reason: "line_rate", until: line.nextSendAt && line.nextSendAt > now ? line.nextSendAt : now });
  }
  return out;
}

interface OutboxFilter {
  from?: string;
  status?: OutboxStatus;
  hold_reason?: StoredHoldReason;
}

export async function outboxWhere(actor: Actor, input: OutboxFilter) {
  const scope = await outboxScope(actor, input.from ? await resolveLine(actor, input.from) : null);
  return { ...scope, ...(input.hold_reason ? holdWhere(input.hold_reason) : statusWhere(input.status)) };
}

export async function listOutbox(actor: Actor, input: OutboxFilter & { limit: number; cursor?: string }): Promise<Page<ReturnType<typeof serializeOutboxItem>>> {
  const db = await getDb();
  const page = keysetDesc(null, input.cursor);
  const rows = await db.outboxItem.findMany({
    where: { ...(await outboxWhere(actor, input)), ...page.where },
    orderBy: page.orderBy,
    take: input.limit + 1,
  });
  const holds = await lineHolds(rows);
  return toPage(rows, input.limit, (o) => serializeOutboxItem(o, holds.get(o.id) ?? null), (o) => [o.id]);
}

// The update only matches a pending row, so a claim or an approval racing it leaves exactly one winner: a claimed
// item, or one the owner approved to go now, is on its way and can no longer be canceled.
export async function cancelOutboxItem(actor: Actor, id: string) {
  const item = await findOutboxItem(actor, id);
  const canceled = await cancelPending(item.id);
  if (!canceled) {
    const now = await findOutboxItem(actor, id);
    const message =
      now.status === "pending" && now.reviewedAt
        ? `Outbox item ${id} was approved to go now and is on its way: it can no longer be canceled.`
        : `Outbox item ${id} is ${wireStatus(now.status)}: only a pending item can be canceled.`;
    throw new ApiError("outbox_item_not_cancelable", message, { param: "id" });
  }
  return serializeOutboxItem(canceled);
}

export const RescheduleBody = z
  .object({ send_at: z.number().int("must be a whole number of Unix milliseconds").describe("The new time (Unix ms): in the future, at most 365 days ahead") })
  .strict();

export async function rescheduleOutboxItem(actor: Actor, id: string, input: z.output<typeof RescheduleBody>) {
  const at = scheduledTime(input.send_at)!;
  const item = await findOutboxItem(actor, id);
  const moved = await schedulePending(item.id, at);
  if (!moved) {
    const now = await findOutboxItem(actor, id);
    throw new ApiError("outbox_item_not_reschedulable", `Outbox item ${id} is ${wireStatus(now.status)}: only a pending item can be rescheduled.`, { param: "id" });
  }
  // An engine that runs each item on its own (Inngest) starts a run that waits for the new time.
  const line = await findLine(moved.lineId);
  fire("outbox.stored", { id: moved.id, lineId: moved.lineId, serial: line ? sendsSerially(line.provider) : false });
  return serializeOutboxItem(moved);
}

import type { Actor } from "../access/actor";
import type { OutboxItem } from "../../generated/prisma/client";
import { ApiError } from "../../kernel/errors";
import { fire } from "../../kernel/signals";
import { approveHeld, rejectHeld } from "../../outbox/approval";
import { sendsSerially } from "../../outbox/serial";
import { findLine } from "../../db/line-cache";
import type { Unit } from "../../write/unit";
import { serializeOutboxItem } from "../../wire/serializers";
import { findOutboxItem } from "./outbox";

// Approval of sends by keys with require_approval (docs/agents.md): the owner approves or
// rejects each held send (dashboard, POST /v1/outbox/approve and /reject with the
// outbox:approve scope, GraphQL). The opt-in webhook event outbox.approval_requested tells the
// owner's tooling that one waits.

/** Who reviewed or paused: the signed-in user, else the API key. */
export function actorName(actor: Actor): string {
  return actor.userId ?? actor.keyId ?? actor.accountId;
}

/** The webhook event of a send that waits for approval, written with the item. */
export async function requestApproval(unit: Unit, id: string): Promise<void> {
  const [item] = await unit.query<OutboxItem>(`SELECT * FROM "OutboxItem" WHERE id = $1`, [id]);
  if (!item) return;
  const data = { ...serializeOutboxItem(item), api_key_id: item.apiKeyId };
  await unit.fanOut([{ accountId: item.accountId, lineId: item.lineId, event: "outbox.approval_requested", data }]);
}

async function notReviewable(actor: Actor, id: string): Promise<ApiError> {
  const item = await findOutboxItem(actor, id);
  const view = serializeOutboxItem(item);
  const what = view.status === "pending" ? `pending${view.hold_reason ? ` (${view.hold_reason})` : ""}` : view.status;
  return new ApiError("outbox_item_not_reviewable", `Outbox item ${id} is ${what}: only a send waiting for approval can be approved or rejected.`, { param: "id" });
}

/** Approves a send waiting for approval: it goes now, or at the send_at it asked for. */
export async function approveSend(actor: Actor, id: string) {
  const item = await findOutboxItem(actor, id);
  const approved = await approveHeld(item.id, actorName(actor));
  if (!approved) throw await notReviewable(actor, id);
  const line = await findLine(approved.lineId);
  fire("outbox.stored", { id: approved.id, lineId: approved.lineId, serial: line ? sendsSerially(line.provider) : false });
  return serializeOutboxItem(approved);
}

/** Rejects a send waiting for approval: it ends failed with error "rejected" and never goes. */
export async function rejectSend(actor: Actor, id: string) {
  const item = await findOutboxItem(actor, id);
  const rejected = await rejectHeld(item, actorName(actor));
  if (!rejected) throw await notReviewable(actor, id);
  return serializeOutboxItem(rejected);
}

import { sql } from "../db";
import { findLine } from "../db/line-cache";
import type { Line, OutboxItem } from "../generated/prisma/client";
import { log } from "../kernel/log";
import { type ClaimedMessage, decideHolds } from "../policy/hold-decision";
import type { HoldReason } from "../policy/hold-reasons";
import { mayHold, policyOf } from "../policy/line-send-policy";
import { decideService, mayFallBack } from "../policy/sms-fallback";
import { MessagePayload } from "./payloads";
import { failClaimed } from "./queue";
import { markFallback, moveToPoolSmsLine } from "./sms-fallback-moves";

// The policy step, between the claim and the send, in both engines: server/policy decides, this
// applies. A held item keeps its due time in availableAt, so the claims' index finds it when due.

async function holdBack(item: OutboxItem, reason: HoldReason, until: Date): Promise<void> {
  await sql(
    `UPDATE "OutboxItem" SET status = 'held', "holdReason" = $2, "availableAt" = $3, attempts = GREATEST(0, attempts - 1),
       "claimedBy" = NULL, "leaseExpiresAt" = NULL
     WHERE id = $1 AND status = 'claimed' AND "claimedBy" IS NOT DISTINCT FROM $4`,
    [item.id, reason, until, item.claimedBy],
  );
}

/** The policy could not be read (the database hiccuped): the item waits a little, never goes unchecked. */
async function policyUnreadable(item: OutboxItem, err: unknown, now: number): Promise<void> {
  log().error({ err, outbox_id: item.id }, "applying the send policy failed");
  await holdBack(item, "line_unavailable", new Date(now + 5_000)).catch(() => undefined);
}

/** Reactions, typing and receipts answer what the contact did: they go at once. */
export async function admit(items: OutboxItem[], now = Date.now()): Promise<OutboxItem[]> {
  const admitted: (OutboxItem | null)[] = items.map(() => null);
  const judged: (ClaimedMessage & { at: number })[] = [];
  const routed: { at: number; line: Line }[] = [];
  for (const [at, item] of items.entries()) {
    if (item.kind !== "message") {
      admitted[at] = item;
      continue;
    }
    try {
      const line = await findLine(item.lineId);
      if (!line) admitted[at] = item;
      else if (!mayHold(policyOf(line))) routed.push({ at, line });
      else judged.push({ at, item, line, policy: policyOf(line), chatId: MessagePayload.parse(item.payload).chat_id });
    } catch (err) {
      await policyUnreadable(item, err, now);
    }
  }
  if (judged.length) {
    for (const [i, decision] of (await decideHolds(judged, now)).entries()) {
      const { at, item, line } = judged[i]!;
      if ("error" in decision) await policyUnreadable(item, decision.error, now);
      else if (decision.go) routed.push({ at, line });
      else await holdBack(item, decision.reason, decision.until);
    }
  }
  for (const { at, line } of routed) {
    const item = items[at]!;
    if (!mayFallBack(item, line)) {
      admitted[at] = item;
      continue;
    }
    try {
      const recipient = MessagePayload.parse(item.payload);
      const service = await decideService(item, line, recipient, now);
      if (service !== "as-is" && !item.fallback) await markFallback(item);
      if (service !== "pool-sms") admitted[at] = item;
      else {
        const refused = await moveToPoolSmsLine(item, recipient.to);
        if (refused) await failClaimed(item, refused);
      }
    } catch (err) {
      await policyUnreadable(item, err, now);
    }
  }
  return admitted.filter((v): v is OutboxItem => v !== null);
}

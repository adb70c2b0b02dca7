import { z } from "zod";
import type { Actor } from "../access/actor";
import type { Line } from "../../generated/prisma/client";
import { policyOf } from "../../policy/line-send-policy";
import { lineBudgetUse, type Window } from "../../policy/new-contact-budget";
import { HOLD_REASONS, type HoldReason } from "../../policy/hold-reasons";
import { queuedCounts } from "../../outbox/queued-counts";
import { quietState } from "../../policy/quiet-hours";
import { sendsSerially } from "../../outbox/serial";
import { poolLines } from "../pools/pools";
import { resolveLine } from "./lines";

export const CapacityQuery = z.object({
  from: z.string().trim().min(1, "must not be empty").max(320).describe("A line (handle or ln_ ID) or a pool (pool_ ID)"),
});

export interface LineCapacity {
  line_id: string;
  handle: string;
  status: string;
  new_contacts: { hour: Window; day: Window };
  quiet_hours: { active: boolean; until: number | null };
  queued: Record<HoldReason, number>;
  next_slot_at: number | null;
}

async function linesCapacity(lines: Line[], now = Date.now()): Promise<LineCapacity[]> {
  return Promise.all(
    lines.map(async (line) => {
      const policy = policyOf(line);
      const [use, counts] = await Promise.all([lineBudgetUse(line.id, policy, now), queuedCounts(line.id, now)]);
      const quiet = policy.quiet_hours ? quietState(policy.quiet_hours, now) : null;
      const queued = Object.fromEntries(HOLD_REASONS.map((r) => [r, 0])) as Record<HoldReason, number>;
      for (const [reason, n] of Object.entries(counts)) if (reason in queued) queued[reason as HoldReason] += n;
      // Due sends on provider lines wait their turn (the line's pace), or for the provider (disconnected).
      const turn = sendsSerially(line.provider) ? (counts.turn ?? 0) : 0;
      queued[line.status === "disconnected" ? "line_unavailable" : "line_rate"] += turn;
      const slot = use.next_slot_at === null ? null : Math.max(use.next_slot_at, quiet?.active ? (quiet.until ?? now) : now);
      return {
        line_id: line.id,
        handle: line.handle,
        status: line.status,
        new_contacts: { hour: use.hour, day: use.day },
        quiet_hours: { active: quiet?.active ?? false, until: quiet?.active ? quiet.until : null },
        queued,
        next_slot_at: slot,
      };
    }),
  );
}

export async function getCapacity(actor: Actor, input: z.output<typeof CapacityQuery>) {
  const pool = input.from.startsWith("pool_") ? await poolLines(actor, input.from) : null;
  const lines = pool ? pool.lines : [await resolveLine(actor, input.from)];
  return { object: "capacity" as const, from: input.from, pool_id: pool?.pool.id ?? null, lines: await linesCapacity(lines) };
}

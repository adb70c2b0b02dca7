import { z } from "zod";
import type { Actor } from "../access/actor";
import { sql } from "../../db";
import type { Line } from "../../generated/prisma/client";
import { policyOf } from "../../kernel/send-policy";
import { lineBudgetUse, type Window } from "../../outbox/budgets";
import { heldCounts, HOLD_REASONS, type HoldReason } from "../../outbox/holds";
import { quietState } from "../../kernel/quiet-hours";
import { sendsSerially } from "../../outbox/serial";
import { poolLines } from "../pools/pools";
import { resolveLine } from "./lines";

// GET /v1/capacity: what each line can still send, and what waits. For a pool, every line of
// it the caller may use.

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

/** Due sends on provider lines that wait their turn (pace) or for the provider (disconnected). */
async function waitingTurn(lineIds: string[], now: Date): Promise<Map<string, number>> {
  const rows = await sql<{ lineId: string; n: number }>(
    `SELECT "lineId", count(*)::int AS n FROM "OutboxItem" WHERE "lineId" = ANY($1::text[]) AND status = 'pending' AND "availableAt" <= $2 GROUP BY 1`,
    [lineIds, now],
  );
  return new Map(rows.map((r) => [r.lineId, r.n]));
}

async function linesCapacity(lines: Line[], now = Date.now()): Promise<LineCapacity[]> {
  const ids = lines.map((l) => l.id);
  const [held, waiting] = await Promise.all([heldCounts(ids), waitingTurn(ids, new Date(now))]);
  return Promise.all(
    lines.map(async (line) => {
      const policy = policyOf(line);
      const use = await lineBudgetUse(line.id, policy, now);
      const quiet = policy.quiet_hours ? quietState(policy.quiet_hours, now) : null;
      const queued = Object.fromEntries(HOLD_REASONS.map((r) => [r, 0])) as Record<HoldReason, number>;
      for (const [reason, n] of Object.entries(held.get(line.id) ?? {})) if (reason in queued) queued[reason as HoldReason] += n;
      const turn = sendsSerially(line.provider) ? (waiting.get(line.id) ?? 0) : 0;
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

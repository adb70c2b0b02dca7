import { z } from "zod";
import { invalidParam } from "../../kernel/errors";
import { MAX_SCHEDULE_MS } from "../../policy/hold-reasons";

export const sendAt = z
  .number()
  .int("must be a whole number of Unix milliseconds")
  .nullable()
  .optional()
  .describe("Extension. Schedules the send: a time in the future (Unix ms), at most 365 days ahead. The item is pending, held with hold_reason \"scheduled\", until then");

/** A send's scheduled time, checked: in the future and at most a year ahead (null: now). */
export function scheduledTime(value: number | null | undefined, now = Date.now()): Date | null {
  if (value === null || value === undefined) return null;
  if (value < 1e11) throw invalidParam("send_at", `send_at is Unix milliseconds; ${value} looks like seconds (${value}000 would be milliseconds).`);
  if (value <= now) throw invalidParam("send_at", `send_at must be in the future; ${new Date(value).toISOString()} has passed.`);
  if (value > now + MAX_SCHEDULE_MS) throw invalidParam("send_at", "send_at must be at most 365 days ahead.");
  return new Date(value);
}

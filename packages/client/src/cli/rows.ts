import type { Capacity, LineCapacity, Message, OutboxItem } from "../generated.js";
import { table, time, UsageError } from "./args.js";
import type { Style } from "./ui.js";

export const health = (ui: Style, status: string, reason?: string | null) =>
  (status === "connected" ? ui.green : status === "degraded" ? ui.yellow : ui.red)(status) + (reason ? ` (${reason})` : "");

export const held = (item: OutboxItem) => (item.hold_reason ? ` (held: ${item.hold_reason}${item.not_before ? ` until ${time(item.not_before)} UTC` : ""})` : "");

/** A hold is no server that is down, and approval is a person's decision, which no wait brings about. */
export function pendingText(item: OutboxItem, baseUrl: string, waitedMs: number): string {
  const until = item.not_before ? ` until ${time(item.not_before)} UTC` : "";
  const follow = `Follow it with: relay outbox get ${item.id} --wait`;
  switch (item.hold_reason) {
    case "approval":
      return [
        `${item.id} is waiting for the owner's approval: it has not been sent.`,
        `Approve it on the dashboard's Approvals page (${baseUrl}/dashboard/approvals), or with \`relay outbox approve ${item.id}\` (a key with the outbox:approve scope); \`relay outbox reject ${item.id}\` declines it.`,
        follow,
      ].join("\n");
    case "scheduled":
      return `${item.id} is scheduled${until}: it has not been sent, and goes then (relay outbox cancel ${item.id} calls it off). ${follow}`;
    case "quiet_hours":
      return `${item.id} is held by the line's quiet hours${until}: it has not been sent, and goes then. ${follow}`;
    case "new_contact_budget":
      return `${item.id} is held by the line's budget of new contacts${until}: it has not been sent, and goes then (relay capacity shows the budgets). ${follow}`;
    case "line_unavailable":
      return `${item.id} is waiting for the line's provider, which is unavailable: it goes when the line is back (relay lines shows its status). ${follow}`;
    case "line_rate":
      return `${item.id} is waiting its turn under the line's send rate. ${follow}`;
    default:
      return `${item.id} is still ${item.status} after ${Math.round(waitedMs / 1000)} s: it has not been sent yet. ${follow}`;
  }
}

export function capacityText(capacity: Capacity, ui: Style): string {
  const budget = (w: LineCapacity["new_contacts"]["hour"]) => (w.limit === null ? `${w.used} (no limit)` : `${w.used}/${w.limit}`);
  const now = Date.now();
  const rows = capacity.lines.map((l) => {
    const waiting = Object.entries(l.queued).filter(([, n]) => n > 0);
    const total = waiting.reduce((sum, [, n]) => sum + n, 0);
    return {
      handle: l.handle,
      health: health(ui, l.status),
      "new/hour": budget(l.new_contacts.hour),
      "new/day": budget(l.new_contacts.day),
      quiet: l.quiet_hours.active ? (l.quiet_hours.until ? `until ${time(l.quiet_hours.until)}` : "yes") : "no",
      waiting: total ? `${total} (${waiting.map(([reason, n]) => `${n} ${reason}`).join(", ")})` : "0",
      "next slot": l.next_slot_at === null ? "none (a budget is 0)" : l.next_slot_at <= now ? "now" : time(l.next_slot_at),
    };
  });
  const head = capacity.pool_id ? `Pool ${capacity.pool_id}: ${capacity.lines.length} line(s)\n` : "";
  return `${head}${table(rows, ["handle", "health", "new/hour", "new/day", "quiet", "waiting", "next slot"], ui)}\n${ui.dim("new/hour, new/day: conversations opened with new contacts / the line's budget, per sliding hour and day. Times are UTC.")}`;
}

export const OUTBOX_ACTIONS = ["get", "cancel", "reschedule", "approve", "reject"] as const;
const OUTBOX_STATUSES = ["pending", "claimed", "sent", "failed"] as const;
const HOLD_REASONS = ["scheduled", "quiet_hours", "new_contact_budget", "approval"] as const;

export const outboxStatusOf = (raw: string | undefined) => {
  if (raw === undefined || (OUTBOX_STATUSES as readonly string[]).includes(raw)) return raw as (typeof OUTBOX_STATUSES)[number] | undefined;
  throw new UsageError(`--status must be one of ${OUTBOX_STATUSES.join(", ")}`);
};
export const holdReasonOf = (raw: string | undefined) => {
  if (raw === undefined || (HOLD_REASONS as readonly string[]).includes(raw)) return raw as (typeof HOLD_REASONS)[number] | undefined;
  throw new UsageError(`--hold must be one of ${HOLD_REASONS.join(", ")}`);
};

export function outboxRow(item: OutboxItem) {
  const p = (item.payload ?? {}) as { to?: unknown; text?: unknown; attachments?: unknown; is_audio_message?: unknown; type?: unknown; is_typing?: unknown };
  const files = Array.isArray(p.attachments) ? p.attachments.length : 0;
  const what =
    p.is_audio_message === true
      ? "[voice memo]"
      : typeof p.text === "string" && p.text
        ? p.text
        : files
          ? `[${files} attachment(s)]`
          : typeof p.type === "string"
            ? p.type
            : typeof p.is_typing === "boolean"
              ? (p.is_typing ? "on" : "off")
              : "";
  return { ...item, to: typeof p.to === "string" ? p.to : "", what, held: item.hold_reason ?? "", created: time(item.created_at) };
}

export const messageRow = (m: Message) => ({
  time: time(m.sent_at),
  from: m.is_from_me ? "me" : m.sender,
  text: m.text ?? m.attachments.map((a) => `[${a.filename}]`).join(" "),
});

export const HOLD_REASONS = ["scheduled", "quiet_hours", "new_contact_budget", "line_rate", "line_unavailable", "approval"] as const;
export type HoldReason = (typeof HOLD_REASONS)[number];

export const NEVER = new Date("9999-12-31T00:00:00.000Z");

export const MAX_SCHEDULE_MS = 365 * 24 * 3_600_000;

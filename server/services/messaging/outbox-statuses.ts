// Outbox item statuses (client-safe: the dashboard's filters list them too).
export const OUTBOX_STATUSES = ["pending", "claimed", "sent", "failed"] as const;
export type OutboxStatus = (typeof OUTBOX_STATUSES)[number];

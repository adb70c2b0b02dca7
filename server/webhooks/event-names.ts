// Free of server imports: the dashboard's forms list them too.
export const WEBHOOK_EVENTS = [
  "message.received",
  "message.sent",
  "reaction.added",
  "reaction.removed",
  "message.failed",
  "line.status_changed",
  "message.delivered",
  "message.undelivered",
  "outbox.approval_requested",
] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** Sent only to subscribers that name them (a stream without `events` does not get them). */
export const OPT_IN_EVENTS: readonly WebhookEvent[] = ["message.delivered", "message.undelivered", "outbox.approval_requested"];

// The events webhooks deliver (SPEC.md "Events", plus the opt-in message.failed and
// line.status_changed extensions).
// Kept free of server imports: the dashboard's forms list them too.
export const WEBHOOK_EVENTS = [
  "message.received",
  "message.sent",
  "reaction.added",
  "reaction.removed",
  "message.failed",
  "line.status_changed",
] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

import { deliverOutboxItem } from "./deliver-outbox-item";
import { deliverWebhooksFn } from "./deliver-webhooks";
import { runChores } from "./run-chores";

/** Every function this app serves at /api/inngest. */
export const functions = [deliverOutboxItem, runChores, deliverWebhooksFn];

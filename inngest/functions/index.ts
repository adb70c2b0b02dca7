import { deliverOutboxItem } from "./deliver-outbox-item";
import { deliverWebhooksFn } from "./deliver-webhooks";
import { runChores } from "./run-chores";

export const functions = [deliverOutboxItem, runChores, deliverWebhooksFn];

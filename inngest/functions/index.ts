import { deliverOutboxItem } from "./deliver-outbox-item";
import { deliverWebhooksFn } from "./deliver-webhooks";
import { probeLines } from "./probe-lines";
import { sweepOutbox } from "./sweep-outbox";

/** Every function this app serves at /api/inngest. */
export const functions = [deliverOutboxItem, sweepOutbox, deliverWebhooksFn, probeLines];

import { processSingleton } from "../kernel/singleton";
import type { Webhook, WebhookDelivery } from "../generated/prisma/client";

// The embedded sender takes the deliveries its own process's transactions write: they are
// stored already claimed (status delivering, a lease, attempt 1) and handed over after the
// commit, so no claim query reads them back and their JSON is not parsed again. Should the
// process die first, the lease runs out and any instance's sender claims them as usual.

export interface HandedDelivery extends WebhookDelivery {
  /** `payload` as the fan-out serialized it: the body is built around it. */
  payloadJson: string;
  webhook: Webhook;
}

export interface LocalSender {
  /** A slot for one delivery of this webhook, or false: it is stored pending for a claim. */
  reserve(webhookId: string): boolean;
  /** Slots whose transaction rolled back. */
  unreserve(deliveries: readonly Pick<WebhookDelivery, "webhookId">[]): void;
  /** After the commit. */
  take(deliveries: HandedDelivery[]): void;
}

const slot = processSingleton("webhook-handoff", () => ({ sender: null as LocalSender | null }));

export function setLocalSender(sender: LocalSender | null): void {
  slot.sender = sender;
}

export const localSender = (): LocalSender | null => slot.sender;

import { readProviderWebhook } from "../../platform/inbound-event";
import type { InboundRequest } from "../../platform/provider";
import { noteProviderUp } from "../lines/line-health";
import { findLine } from "../lines/lines";
import { type InboundOutcome, ingestProviderEvent } from "./provider-events";

export interface WebhookReceipt {
  counts: Record<InboundOutcome, number>;
  /** The provider's own answer body, when it expects one (Twilio: TwiML). */
  reply?: { contentType: string; body: string };
}

export async function receiveProviderWebhook(lineId: string, request: InboundRequest): Promise<WebhookReceipt> {
  const { line, pl, events, reply } = readProviderWebhook(lineId.startsWith("ln_") ? await findLine(lineId) : null, request);
  await noteProviderUp(line.id, "webhook");
  const counts: Record<InboundOutcome, number> = { stored: 0, duplicate: 0, adopted: 0, ignored: 0 };
  for (const event of events) counts[await ingestProviderEvent(line, pl, event)]++;
  return { counts, ...(reply ? { reply } : {}) };
}

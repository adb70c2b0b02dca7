import type { InboundRequest } from "../../platform/provider";
import { receiveProviderWebhook } from "../../services/inbound/provider-webhook";
import { errorAnswer } from "./responses";

// POST /api/inbound/<line_id>: the answer to a provider's webhook, the same whichever transport
// received it (the Next route, or the production server's own listener: fast-routes.ts).

export type Answer =
  | { status: number; body: object; headers: Record<string, string> }
  /** A provider's own answer format (Twilio: TwiML), sent as is. */
  | { status: number; text: string; contentType: string; headers: Record<string, string> };

/** Verifies, maps and takes in one provider webhook for `lineId`; never throws. */
export async function answerInbound(lineId: string, request: InboundRequest, requestId: string): Promise<Answer> {
  try {
    const { counts, reply } = await receiveProviderWebhook(lineId, request);
    if (reply) return { status: 200, text: reply.body, contentType: reply.contentType, headers: {} };
    return { status: 200, body: { object: "inbound_receipt", received: counts }, headers: {} };
  } catch (err) {
    return errorAnswer(err, requestId);
  }
}

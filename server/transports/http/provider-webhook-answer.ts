import type { InboundRequest } from "../../platform/provider";
import { receiveProviderWebhook } from "../../services/inbound/provider-webhook";
import { errorAnswer } from "./responses";

// One answer whichever listener received the webhook (the Next route, or fast-routes.ts).

export type Answer =
  | { status: number; body: object; headers: Record<string, string> }
  | { status: number; text: string; contentType: string; headers: Record<string, string> };

export async function answerInbound(lineId: string, request: InboundRequest, requestId: string): Promise<Answer> {
  try {
    const { counts, reply } = await receiveProviderWebhook(lineId, request);
    if (reply) return { status: 200, text: reply.body, contentType: reply.contentType, headers: {} };
    return { status: 200, body: { object: "inbound_receipt", received: counts }, headers: {} };
  } catch (err) {
    return errorAnswer(err, requestId);
  }
}

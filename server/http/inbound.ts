import { ApiError } from "../errors";
import type { InboundRequest } from "../platform/provider";
import { receiveProviderWebhook } from "../services/provider-inbound";
import { errorAnswer } from "./responses";

// POST /api/inbound/<line_id>: the answer to a provider's webhook, the same whichever transport
// received it (the Next route, or the production server's own listener: fast-routes.ts).

export interface Answer {
  status: number;
  body: object;
  headers: Record<string, string>;
}

/** Verifies, maps and takes in one provider webhook for `lineId`; never throws. */
export async function answerInbound(lineId: string, request: InboundRequest, requestId: string): Promise<Answer> {
  try {
    const answer = await receiveProviderWebhook(lineId, request);
    if (answer.status === 200) return { status: 200, body: { object: "inbound_receipt", received: answer.counts }, headers: {} };
    const code = answer.code === "invalid_json" ? "invalid_json" : answer.code === "invalid_signature" ? "invalid_signature" : "invalid_inbound_token";
    return errorAnswer(new ApiError(code, answer.message), requestId);
  } catch (err) {
    return errorAnswer(err, requestId);
  }
}

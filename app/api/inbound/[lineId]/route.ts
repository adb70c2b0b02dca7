// POST /api/inbound/<line_id> - a line's provider delivers its webhooks here (BlueBubbles: ?token=...)
import { ApiError } from "@/server/errors";
import { jsonBodyLimit, readBody } from "@/server/http/body";
import { errorResponse, jsonResponse, newRequestId } from "@/server/http/responses";
import { receiveProviderWebhook } from "@/server/services/provider-inbound";

export const dynamic = "force-dynamic";

export async function POST(request: Request, { params }: { params: Promise<{ lineId: string }> }): Promise<Response> {
  const requestId = newRequestId();
  try {
    const { lineId } = await params;
    const body = await readBody(request, jsonBodyLimit(), "request_too_large");
    const answer = await receiveProviderWebhook(lineId, { url: new URL(request.url), headers: request.headers, body });
    if (answer.status === 200) return jsonResponse(200, { object: "inbound_receipt", received: answer.counts }, requestId);
    const code = answer.code === "invalid_json" ? "invalid_json" : answer.code === "invalid_signature" ? "invalid_signature" : "invalid_inbound_token";
    return errorResponse(new ApiError(code, answer.message), requestId);
  } catch (err) {
    return errorResponse(err, requestId);
  }
}

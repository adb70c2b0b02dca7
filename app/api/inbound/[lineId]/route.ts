// POST /api/inbound/<line_id> - a line's provider delivers its webhooks here (BlueBubbles: ?token=...; Twilio and SMS Gateway sign theirs).
// The production server (scripts/start.mjs) answers this path itself, without Next's request
// handling (server/transports/http/fast-routes.ts); this route serves it under `next dev` and tests.
import { jsonBodyLimit, readBody } from "@/server/transports/http/body";
import { answerInbound } from "@/server/transports/http/provider-webhook-answer";
import { methodNotAllowed } from "@/server/transports/http/methods";
import { envelopeHeaders, errorResponse, jsonResponse, requestIdOf } from "@/server/transports/http/responses";

export const dynamic = "force-dynamic";

export async function POST(request: Request, { params }: { params: Promise<{ lineId: string }> }): Promise<Response> {
  const requestId = requestIdOf(request.headers);
  try {
    const { lineId } = await params;
    const body = await readBody(request, jsonBodyLimit(), "request_too_large");
    const answer = await answerInbound(lineId, { url: new URL(request.url), headers: request.headers, body }, requestId);
    if ("text" in answer) return new Response(answer.text, { status: answer.status, headers: { ...envelopeHeaders(requestId, answer.headers), "Content-Type": answer.contentType } });
    return jsonResponse(answer.status, answer.body, requestId, answer.headers);
  } catch (err) {
    return errorResponse(err, requestId);
  }
}

/** Providers only POST here: every other method is 405 method_not_allowed with `Allow: POST` (Next answered an empty 405). */
function notAllowed(request: Request): Response {
  return errorResponse(methodNotAllowed(request.method, new URL(request.url).pathname), requestIdOf(request.headers));
}

export const GET = notAllowed;
export const PUT = notAllowed;
export const PATCH = notAllowed;
export const DELETE = notAllowed;

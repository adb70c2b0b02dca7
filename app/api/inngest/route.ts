// /api/inngest - the Inngest endpoint when that engine is configured (docs/inngest.md), else a JSON 404.
import type { NextRequest } from "next/server";
import { serve } from "inngest/next";
import { inngest } from "@/inngest/inngest-client";
import { functions } from "@/inngest/functions";
import { config } from "@/server/kernel/config";
import { ApiError } from "@/server/kernel/errors";
import { errorResponse, requestIdOf } from "@/server/transports/http/responses";

const handlers = serve({ client: inngest, functions });

function whenConfigured(handler: (request: NextRequest, context: unknown) => Promise<Response>) {
  return (request: NextRequest, context: unknown): Promise<Response> | Response => {
    if (config().deliveryEngine === "inngest") return handler(request, context);
    const err = new ApiError("route_not_found", "Inngest is not configured on this server (set INNGEST_EVENT_KEY or INNGEST_DEV); the embedded runner delivers.");
    return errorResponse(err, requestIdOf(request.headers));
  };
}

export const GET = whenConfigured(handlers.GET);
export const POST = whenConfigured(handlers.POST);
export const PUT = whenConfigured(handlers.PUT);

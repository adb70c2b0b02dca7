import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import type { Actor } from "../auth/actor";
import { sessionActor } from "../auth/session";
import { ApiError } from "../errors";
import { clientIp } from "../http/client-ip";
import { newRequestId } from "../http/responses";
import { MAX_BATCH_SIZE, runWithRequestId } from "./init";
import { appRouter } from "./router";

/** Serves /api/trpc/*; the caller is the next-auth session's account (tests pass their own). */
export function handleTrpc(req: Request, resolveActor: () => Promise<Actor | null> = sessionActor): Promise<Response> {
  const requestId = newRequestId();
  return runWithRequestId(requestId, () =>
    fetchRequestHandler({
      endpoint: "/api/trpc",
      req,
      router: appRouter,
      maxBatchSize: MAX_BATCH_SIZE,
      createContext: async () => ({ actor: await resolveActor(), requestId, clientIp: clientIp(req.headers) }),
      responseMeta({ errors }) {
        // A 429's Retry-After (and any other header an ApiError carries) reaches the browser.
        const headers: Record<string, string> = { "Request-Id": requestId };
        for (const error of errors) if (error.cause instanceof ApiError) Object.assign(headers, error.cause.headers);
        return { headers };
      },
    }),
  );
}

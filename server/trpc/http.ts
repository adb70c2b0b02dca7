import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import type { Actor } from "../auth/actor";
import { sessionActor } from "../auth/session";
import { newRequestId } from "../http/responses";
import { appRouter } from "./router";

/** Serves /api/trpc/*; the caller is the next-auth session's account (tests pass their own). */
export function handleTrpc(req: Request, resolveActor: () => Promise<Actor | null> = sessionActor): Promise<Response> {
  return fetchRequestHandler({
    endpoint: "/api/trpc",
    req,
    router: appRouter,
    createContext: async () => ({ actor: await resolveActor(), requestId: newRequestId() }),
  });
}

import { headers } from "next/headers";
import { redirect } from "next/navigation";
import type { Actor } from "@/server/services/access/actor";
import { sessionActor } from "@/server/services/access/session";
import { annotateRequest, requestIdOf } from "@/server/observability/request-context";

/** The session's Actor; without a session, off to sign in (layouts and pages render concurrently, so each checks). */
export async function requireSession(): Promise<Actor> {
  const actor = await sessionActor();
  if (!actor) redirect("/sign-in?callbackUrl=/dashboard");
  // The page's request log line names the account.
  annotateRequest(requestIdOf(await headers()), actor);
  return actor;
}

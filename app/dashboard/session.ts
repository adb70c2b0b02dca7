import { redirect } from "next/navigation";
import type { Actor } from "@/server/auth/actor";
import { sessionActor } from "@/server/auth/session";

/** The session's Actor; without a session, off to sign in (layouts and pages render concurrently, so each checks). */
export async function requireSession(): Promise<Actor> {
  const actor = await sessionActor();
  if (!actor) redirect("/sign-in?callbackUrl=/dashboard");
  return actor;
}

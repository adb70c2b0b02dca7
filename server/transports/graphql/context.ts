import type { Actor } from "../../services/access/actor";
import { authenticate } from "../../services/access/api-keys";
import { sessionActor } from "../../services/access/session";
import { getDb } from "../../db";
import type { PrismaClient } from "../../generated/prisma/client";
import { fileUrlSigner, type FileUrlSigner } from "../../storage/signed-urls";
import { createLoaders, type Loaders } from "./loaders";

const SESSION_COOKIE = /(?:^|;\s*)(?:__Secure-)?next-auth\.session-token=/;

/** Whether the request carries the dashboard's session cookie. */
export const hasSessionCookie = (request: Request) => SESSION_COOKIE.test(request.headers.get("cookie") ?? "");

/**
 * The caller of a GraphQL request: the API key in `Authorization`, or else the dashboard's
 * signed-in session. The session cookie is SameSite=Lax and CORS never allows credentials, and
 * cookie-authenticated requests must pass the CSRF check of yoga.ts, so another site cannot make
 * a signed-in browser call this API.
 */
export async function graphqlActor(request: Request): Promise<Actor> {
  const authorization = request.headers.get("authorization");
  if (!authorization && hasSessionCookie(request)) {
    const actor = await sessionActor();
    if (actor) return actor;
  }
  return authenticate(authorization);
}

/**
 * Checks that the caller of a long-lived request may still call: for an API key, authenticates
 * its header again (from the key cache, refreshed every API_KEY_CACHE_SECONDS), throwing what a
 * new request would get (invalid_api_key once revoked or expired). A dashboard session is not
 * re-checked.
 */
export function callerCheck(request: Request, actor: Actor): () => Promise<void> {
  const authorization = request.headers.get("authorization");
  if (actor.keyId === null) return async () => undefined;
  return async () => void (await authenticate(authorization));
}

/** What one HTTP request carries through yoga: its ID, its caller and the headers to answer with. */
export interface RequestScope {
  requestId: string;
  actor: Actor | null;
  headers: Record<string, string>;
  /** Set with the actor: see callerCheck. */
  recheckCaller: () => Promise<void>;
}

export interface GraphQLContext {
  actor: Actor;
  requestId: string;
  prisma: PrismaClient;
  /** One signer per request, so every file URL of a response expires together (as in /v1). */
  fileUrl: () => Promise<FileUrlSigner>;
  loaders: Loaders;
  /** Throws once the caller's key is revoked or expired (for subscriptions). */
  recheckCaller: () => Promise<void>;
}

export async function createContext(scope: RequestScope): Promise<GraphQLContext> {
  if (!scope.actor) throw new Error("GraphQL context built before the caller was authenticated");
  let signer: Promise<FileUrlSigner> | undefined;
  const prisma = await getDb();
  return {
    actor: scope.actor,
    requestId: scope.requestId,
    prisma,
    fileUrl: () => (signer ??= fileUrlSigner()),
    loaders: createLoaders(scope.actor, prisma),
    recheckCaller: scope.recheckCaller,
  };
}

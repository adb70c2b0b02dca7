import type { Actor } from "../../services/access/actor";
import { authenticate } from "../../services/access/api-keys";
import { sessionActor } from "../../services/access/session";
import { getDb } from "../../db";
import type { PrismaClient } from "../../generated/prisma/client";
import { fileUrlSigner, type FileUrlSigner } from "../../storage/signed-urls";
import { createLoaders, type Loaders } from "./loaders";

const SESSION_COOKIE = /(?:^|;\s*)(?:__Secure-)?next-auth\.session-token=/;

export const hasSessionCookie = (request: Request) => SESSION_COOKIE.test(request.headers.get("cookie") ?? "");

/** The API key in `Authorization`, or else the dashboard's session (SameSite=Lax, and yoga.ts checks CSRF). */
export async function graphqlActor(request: Request): Promise<Actor> {
  const authorization = request.headers.get("authorization");
  if (!authorization && hasSessionCookie(request)) {
    const actor = await sessionActor();
    if (actor) return actor;
  }
  return authenticate(authorization);
}

/** For a long-lived request: its API key authenticated again (key cache), throwing once revoked or expired. */
export function callerCheck(request: Request, actor: Actor): () => Promise<void> {
  const authorization = request.headers.get("authorization");
  if (actor.keyId === null) return async () => undefined;
  return async () => void (await authenticate(authorization));
}

export interface RequestScope {
  requestId: string;
  actor: Actor | null;
  headers: Record<string, string>;
  recheckCaller: () => Promise<void>;
}

export interface GraphQLContext {
  actor: Actor;
  requestId: string;
  prisma: PrismaClient;
  /** One signer per request, so every file URL of a response expires together (as in /v1). */
  fileUrl: () => Promise<FileUrlSigner>;
  loaders: Loaders;
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

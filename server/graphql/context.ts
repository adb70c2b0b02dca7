import type { Actor } from "../auth/actor";
import { authenticate } from "../auth/api-keys";
import { getDb } from "../db";
import type { PrismaClient } from "../generated/prisma/client";
import { fileUrlSigner, type FileUrlSigner } from "../storage/signed-urls";
import { createLoaders, type Loaders } from "./loaders";

/**
 * The caller of a GraphQL request. API keys only for now; a dashboard session is one more
 * line here (try the session cookie first), and everything downstream takes the Actor.
 * Cookie sessions will also want yoga's CSRF prevention, which bearer keys do not need.
 */
export async function graphqlActor(request: Request): Promise<Actor> {
  return authenticate(request.headers.get("authorization"));
}

/** What one HTTP request carries through yoga: its ID, its caller and the headers to answer with. */
export interface RequestScope {
  requestId: string;
  actor: Actor | null;
  headers: Record<string, string>;
}

export interface GraphQLContext {
  actor: Actor;
  requestId: string;
  prisma: PrismaClient;
  /** One signer per request, so every file URL of a response expires together (as in /v1). */
  fileUrl: () => Promise<FileUrlSigner>;
  loaders: Loaders;
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
  };
}

import type { Actor } from "../access/actor";
import type { Line } from "../../generated/prisma/client";
import { getDb } from "../../db";
import { sandboxLine } from "./sandbox-line";

// Services and GraphQL resolvers build their filters from these, so the rule is written once. A line-restricted key
// still reaches the shared sandbox line (SPEC.md "Authentication"), where rows belong to the account whose phone is paired.

export interface ActorScope {
  accountId: string;
  lineId?: { in: string[] };
}

async function allowedLineIds(actor: Actor): Promise<string[] | null> {
  return actor.lineIds ? [...actor.lineIds, (await sandboxLine()).id] : null;
}

export async function whereForActor(actor: Actor): Promise<ActorScope> {
  const lineIds = await allowedLineIds(actor);
  return lineIds ? { accountId: actor.accountId, lineId: { in: lineIds } } : { accountId: actor.accountId };
}

/** On the sandbox line: its own rows. */
export function whereOnLine(actor: Actor, line: Pick<Line, "id">): { accountId: string; lineId: string } {
  return { accountId: actor.accountId, lineId: line.id };
}

export function inScope(scope: ActorScope, row: { accountId: string | null; lineId: string }): boolean {
  return row.accountId === scope.accountId && (!scope.lineId || scope.lineId.in.includes(row.lineId));
}

// Files received on a line belong to it, uploads to the account. A file in a message on one of the key's lines (an
// unrestricted key sent it there) is that line's too: the key sees the message, whose attachment link and webhook
// events carry the file, so GET /v1/files and attaching it again agree with that link.
export async function fileInScope(actor: Actor, fileId: string): Promise<boolean> {
  const lineIds = await allowedLineIds(actor);
  if (!lineIds) return true;
  const db = await getDb();
  const elsewhere = await db.attachment.findFirst({
    where: { fileId, message: { accountId: actor.accountId, isFromMe: false, lineId: { notIn: lineIds } } },
    select: { id: true },
  });
  if (!elsewhere) return true;
  const here = await db.attachment.findFirst({
    where: { fileId, message: { accountId: actor.accountId, lineId: { in: lineIds } } },
    select: { id: true },
  });
  return here !== null;
}

export async function linesForActor(actor: Actor) {
  const ownLines = { accountId: actor.accountId, ...(actor.lineIds ? { id: { in: [...actor.lineIds] } } : {}) };
  return { OR: [ownLines, ...(actor.hasOwner ? [{ id: (await sandboxLine()).id }] : [])] };
}

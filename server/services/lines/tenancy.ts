import type { Actor } from "../access/actor";
import type { Line } from "../../generated/prisma/client";
import { getDb } from "../../db";
import { sandboxLine } from "./sandbox-line";

// Which rows a caller may see, as Prisma where-clauses: the rows of its account, on the lines
// its key may use. A line-restricted key still reaches the shared sandbox line (SPEC.md
// "Authentication"), where rows belong to the account whose phone is paired. Services and
// GraphQL resolvers build their filters from these helpers, so the rule is written once.
// Access to one named line (sandbox activation, line_not_accessible) stays with resolveLine.

export interface ActorScope {
  accountId: string;
  lineId?: { in: string[] };
}

/** The line IDs a restricted key may use (its own and the sandbox line); null when unrestricted. */
async function allowedLineIds(actor: Actor): Promise<string[] | null> {
  return actor.lineIds ? [...actor.lineIds, (await sandboxLine()).id] : null;
}

/** Rows with accountId and lineId (chats, messages, outbox items, webhooks) the caller may see. */
export async function whereForActor(actor: Actor): Promise<ActorScope> {
  const lineIds = await allowedLineIds(actor);
  return lineIds ? { accountId: actor.accountId, lineId: { in: lineIds } } : { accountId: actor.accountId };
}

/** The caller's rows on one line it was granted by resolveLine (on the sandbox line: its own). */
export function whereOnLine(actor: Actor, line: Pick<Line, "id">): { accountId: string; lineId: string } {
  return { accountId: actor.accountId, lineId: line.id };
}

/** Whether one row (or event) of (accountId, lineId) passes a whereForActor filter. */
export function inScope(scope: ActorScope, row: { accountId: string | null; lineId: string }): boolean {
  return row.accountId === scope.accountId && (!scope.lineId || scope.lineId.in.includes(row.lineId));
}

/**
 * Whether the caller may use a file of its account. Files received on a line belong to that
 * line: a line-restricted key may not download, attach or convert those of lines it may not use.
 * Uploads (and files received nowhere else) are the account's. A file that is in a message on
 * one of the key's lines (an unrestricted key sent it there) is that line's too: the key sees the
 * message, its attachment link and its webhook events carry the file, so GET /v1/files and
 * attaching it again agree with that link.
 */
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

/** Lines the caller sees: its account's (only the key's, when restricted), and the sandbox line for accounts with an owner. */
export async function linesForActor(actor: Actor) {
  const ownLines = { accountId: actor.accountId, ...(actor.lineIds ? { id: { in: [...actor.lineIds] } } : {}) };
  return { OR: [ownLines, ...(actor.hasOwner ? [{ id: (await sandboxLine()).id }] : [])] };
}

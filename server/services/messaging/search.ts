import { z } from "zod";
import type { Actor } from "../access/actor";
import { getDb, sql } from "../../db";
import { ApiError, missingParam } from "../../kernel/errors";
import type { Chat } from "../../generated/prisma/client";
import { decodeTimeKeyset, type Page, toPage } from "../../wire/pagination";
import { type MessageWithAttachments, serializeMessage } from "../../wire/serializers";
import { fileUrlSigner } from "../../storage/signed-urls";
import { resolveChat } from "./chats";
import { assertLineAccess, findLine, resolveLine } from "../lines/lines";
import { sandboxLine } from "../lines/sandbox-line";
import { rejectForeignId } from "../access/id-params";

type MessageJson = ReturnType<typeof serializeMessage>;

// Newest first is the hard part (docs/benchmarks.md, "Search"): the newest WINDOW messages of each line in scope are
// tested first; when they do not hold a page newer than every window's edge, their share of matches says how far a
// second window must read (up to MAX_SCANNED), and a rarer word goes to the GIN index.

export const SearchText = z
  .string()
  .trim()
  .min(1, "must not be empty")
  .max(200, "must be at most 200 characters")
  .describe("Full-text search in message text: words (all must match), \"a phrase\", -word to exclude, or");

interface SearchMessagesInput {
  query: string;
  line?: string;
  chat?: string;
  limit: number;
  cursor?: string;
}

const WINDOW = 1000;
const MAX_SCANNED = 20_000;
const CONFIG = "simple";

interface Hit {
  id: string;
  at: number;
}

interface WindowRow {
  seen: number;
  oldest_at: number | null;
  oldest_id: string | null;
  hit_ids: string[] | null;
  hit_ats: number[] | null;
}

const newer = (a: Hit, b: Hit) => a.at > b.at || (a.at === b.at && a.id > b.id);

interface Scope {
  accountId: string;
  lineIds: string[];
  chatId: string | null;
  after: Hit | null;
}

/** The scope's WHERE (for "Message" m) from $2 on: account, lines ($3 in the window's lateral), chat, cursor. */
function scopeWhere(scope: Scope, params: unknown[], lineExpr: string): string {
  const parts = [`m."accountId" = $${params.push(scope.accountId)}`, lineExpr];
  if (scope.chatId) parts.push(`m."chatId" = $${params.push(scope.chatId)}`);
  if (scope.after) {
    const at = `$${params.push(new Date(scope.after.at))}::timestamptz`;
    parts.push(`(m."sentAt", m.id) < (${at}, $${params.push(scope.after.id)})`);
  }
  return parts.join(" AND ");
}

/** Empty when the query has no lexeme (only punctuation). */
async function windows(query: string, scope: Scope, size: number, take: number): Promise<WindowRow[]> {
  const params: unknown[] = [query, scope.lineIds];
  const where = scopeWhere(scope, params, `m."lineId" = l.id`);
  return sql<WindowRow>(
    `WITH q AS (SELECT websearch_to_tsquery('${CONFIG}', $1) AS q)
     SELECT w.* FROM q, unnest($2::text[]) AS l(id)
     CROSS JOIN LATERAL (
       SELECT count(*)::int AS seen,
              (array_agg(x.at ORDER BY x.at, x.id))[1] AS oldest_at,
              (array_agg(x.id ORDER BY x.at, x.id))[1] AS oldest_id,
              (array_agg(x.id ORDER BY x.at DESC, x.id DESC) FILTER (WHERE x.hit))[1:${take}] AS hit_ids,
              (array_agg(x.at ORDER BY x.at DESC, x.id DESC) FILTER (WHERE x.hit))[1:${take}] AS hit_ats
       FROM (SELECT m.id, (extract(epoch FROM m."sentAt") * 1000)::float8 AS at, m."textSearch" @@ q.q AS hit
             FROM "Message" m WHERE ${where}
             ORDER BY m."sentAt" DESC, m.id DESC LIMIT ${size}) x
     ) w
     WHERE numnode(q.q) > 0`,
    params,
  );
}

async function indexed(query: string, scope: Scope, take: number): Promise<Hit[]> {
  const params: unknown[] = [query, scope.lineIds];
  const where = scopeWhere(scope, params, `m."lineId" = ANY($2::text[])`);
  // MATERIALIZED: the matches first, then the sort; inlined, the planner may walk the
  // (lineId, accountId, sentAt) index instead, the slow way for a rare word.
  return sql<Hit>(
    `WITH q AS (SELECT websearch_to_tsquery('${CONFIG}', $1) AS q),
     hits AS MATERIALIZED (SELECT m.id, m."sentAt" FROM "Message" m, q WHERE ${where} AND m."textSearch" @@ q.q)
     SELECT id, (extract(epoch FROM "sentAt") * 1000)::float8 AS at FROM hits ORDER BY "sentAt" DESC, id DESC LIMIT ${take}`,
    params,
  );
}

async function newestMatches(query: string, scope: Scope, take: number): Promise<Hit[]> {
  let size = Math.max(100, Math.ceil(WINDOW / Math.max(1, scope.lineIds.length)));
  for (let pass = 0; pass < 2; pass++) {
    const rows = await windows(query, scope, size, take);
    if (!rows.length) return [];
    const full = rows.filter((r) => r.seen >= size && r.oldest_id !== null);
    // A full window's unread messages are older than its oldest one; the matches down to the
    // newest of those edges are therefore all there are.
    const edge = full.map((r) => ({ id: r.oldest_id!, at: r.oldest_at! })).reduce<Hit | null>((a, b) => (a && newer(a, b) ? a : b), null);
    const hits = rows.flatMap((r) => (r.hit_ids ?? []).map((id, i) => ({ id, at: r.hit_ats![i]! })));
    hits.sort((a, b) => (newer(a, b) ? -1 : newer(b, a) ? 1 : 0));
    const sure = edge ? hits.filter((h) => !newer(edge, h)) : hits;
    if (sure.length >= take || !edge) return sure.slice(0, take);
    // How far back a page of matches lies, at the rate found down to the edge: each window
    // reads as many more messages (the busiest line's, which sets the edge, needs that many).
    const next = sure.length ? Math.ceil(((size * take) / sure.length) * 1.5) : Infinity;
    if (pass === 1 || next * full.length > MAX_SCANNED) break;
    size = Math.max(size * 2, next);
  }
  return indexed(query, scope, take);
}

/** The lines an account-wide search reads: the caller's (the key's, when restricted) and the sandbox line. */
async function linesInScope(actor: Actor): Promise<string[]> {
  const sandbox = (await sandboxLine()).id;
  if (actor.lineIds) return [...new Set([...actor.lineIds, sandbox])];
  const db = await getDb();
  const own = await db.line.findMany({ where: { accountId: actor.accountId }, select: { id: true } });
  return [...new Set([...own.map((l) => l.id), sandbox])];
}

async function chatById(actor: Actor, ref: string): Promise<Chat> {
  rejectForeignId(ref, "chat", "to");
  if (!ref.startsWith("cht_")) throw missingParam("from");
  const db = await getDb();
  const chat = await db.chat.findFirst({ where: { id: ref, accountId: actor.accountId } });
  const line = chat ? await findLine(chat.lineId) : null;
  if (!chat || !line) throw new ApiError("chat_not_found", `No chat with ID '${ref}'.`, { param: "to" });
  await assertLineAccess(actor, line);
  return chat;
}

/** The rows, for GraphQL; searchMessages serializes them. */
export async function searchMessageRows(actor: Actor, input: SearchMessagesInput): Promise<Page<MessageWithAttachments>> {
  const line = input.line ? await resolveLine(actor, input.line) : null;
  const chat = input.chat ? (line ? await resolveChat(actor, line, input.chat) : await chatById(actor, input.chat)) : null;
  const scope: Scope = {
    accountId: actor.accountId,
    lineIds: chat ? [chat.lineId] : line ? [line.id] : await linesInScope(actor),
    chatId: chat?.id ?? null,
    after: input.cursor ? decodeTimeKeyset(input.cursor) : null,
  };
  const hits = await newestMatches(input.query, scope, input.limit + 1);
  const db = await getDb();
  const rows = hits.length ? await db.message.findMany({ where: { id: { in: hits.map((h) => h.id) } }, include: { attachments: true } }) : [];
  const byId = new Map(rows.map((m) => [m.id, m]));
  const ordered = hits.map((h) => byId.get(h.id)).filter((m) => m !== undefined);
  return toPage(ordered, input.limit, (m) => m, (m) => [m.sentAt.getTime(), m.id]);
}

export async function searchMessages(actor: Actor, input: SearchMessagesInput): Promise<Page<MessageJson>> {
  const page = await searchMessageRows(actor, input);
  const url = await fileUrlSigner();
  return { ...page, data: page.data.map((m) => serializeMessage(m, url)) };
}

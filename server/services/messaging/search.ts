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

/** A message as the wire shows it (the same as GET /v1/messages). */
type MessageJson = ReturnType<typeof serializeMessage>;

// Full-text search over message text: the account's messages, or one line's, or one chat's,
// that match a web-search style query (words, "a phrase", -excluded, or), newest first and
// paged like GET /v1/messages. "Message"."textSearch" is to_tsvector('simple', text), a stored
// generated column with a GIN index (migration 20261127090542_message_text_search).
//
// Newest first is what makes this more than one statement. The GIN index finds the matches
// of a rare word at once but returns them unordered, so a common word ("the", 18% of the
// bench's million messages) costs a sort of every match (~400 ms); reading a line's messages
// newest first by its (lineId, accountId, sentAt, id) index and testing each one is cheap for a
// common word and reads the whole line for a rare one. PostgreSQL's choice between the two
// rests on its statistics of lexemes, which misjudge the rare ones (measured: 375 ms for a
// 24-match word on one line), so the choice is made here, by looking: first the newest
// WINDOW messages of each line in scope; when they hold a full page of matches newer than
// every unfinished window, that is the page. Otherwise their share of matches says how far
// to read for a page: a second, larger window when that stays under MAX_SCANNED messages,
// else the GIN index (a word that rare has few matches to sort).

/** The search text (REST `query`, GraphQL `query`, tRPC `query`). */
export const SearchText = z
  .string()
  .trim()
  .min(1, "must not be empty")
  .max(200, "must be at most 200 characters")
  .describe("Full-text search in message text: words (all must match), \"a phrase\", -word to exclude, or");

interface SearchMessagesInput {
  query: string;
  /** The line's handle or ln_ ID; every line the caller may read when absent. */
  line?: string;
  /** Only this chat: cht_ ID, or a contact of `line`. */
  chat?: string;
  limit: number;
  cursor?: string;
}

/** Messages read newest first per line before anything else is tried. */
const WINDOW = 1000;
/** The most messages a second window may read in all; past that the GIN index answers. */
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

/** Whether key a comes before key b newest first ((sentAt, id) descending). */
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

/**
 * The newest `size` messages of each line in scope: how many there were, the oldest of them,
 * and the first `take` matches. Empty when the query has no lexeme (only punctuation).
 */
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

/** Every match in scope through the GIN index, sorted: the first `take`. */
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

/** The newest `take` matches (fewer when there are no more), by the windows, else the index. */
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

/** A chat named without a line: by cht_ ID only. */
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

/**
 * Messages whose text matches `query`, newest first, as GET /v1/messages pages them: of one
 * chat (`chat`: cht_ ID, or a contact of `line`), of one line (`line`: handle or ln_ ID), or
 * of every line the caller may read. The rows, for GraphQL; searchMessages serializes them.
 */
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

/** searchMessageRows as the wire's Message objects (GET /v1/messages?query=, the dashboard). */
export async function searchMessages(actor: Actor, input: SearchMessagesInput): Promise<Page<MessageJson>> {
  const page = await searchMessageRows(actor, input);
  const url = await fileUrlSigner();
  return { ...page, data: page.data.map((m) => serializeMessage(m, url)) };
}

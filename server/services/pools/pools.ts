import { z } from "zod";
import type { Actor } from "../access/actor";
import { getDb, sql } from "../../db";
import { findLine } from "../../db/line-cache";
import { ApiError, invalidParam } from "../../kernel/errors";
import type { Line, Pool } from "../../generated/prisma/client";
import { newId } from "../../kernel/ids";
import { normalizeHandle } from "../../kernel/handles";
import { policyOf } from "../../policy/line-send-policy";
import { lineBudgetUse } from "../../policy/new-contact-budget";
import { notifyChange } from "../../cache/changes";
import { requireIdKind } from "../access/id-params";

// A pool send goes from the line that already talks with the contact (sticky: a conversation never changes number),
// else the connected line with the most new-contact capacity left, round-robin on ties.

export const PoolName = z.string().trim().min(1, "must not be empty").max(100, "must be at most 100 characters");

export interface PoolView {
  object: "pool";
  id: string;
  name: string;
  line_ids: string[];
  created_at: number;
}

type PoolWithLines = Pool & { lines: { lineId: string }[] };

function view(pool: PoolWithLines, visible: (lineId: string) => boolean = () => true): PoolView {
  return { object: "pool", id: pool.id, name: pool.name, line_ids: pool.lines.map((l) => l.lineId).filter(visible), created_at: pool.createdAt.getTime() };
}

const visibleTo = (actor: Actor) => (lineId: string) => !actor.lineIds || actor.lineIds.has(lineId);

async function poolOf(accountId: string | null, id: string, param = "id"): Promise<PoolWithLines> {
  requireIdKind("pool", id, param);
  const db = await getDb();
  const pool = await db.pool.findFirst({ where: { id, ...(accountId ? { accountId } : {}) }, include: { lines: { select: { lineId: true }, orderBy: { addedAt: "asc" } } } });
  if (!pool) throw new ApiError("pool_not_found", `No pool with ID '${id}'.`, { param });
  return pool;
}

const MAX_POOL_LINES = 100;

async function accountLines(accountId: string, lineIds: string[], param: string): Promise<Line[]> {
  const lines: Line[] = [];
  const unique = [...new Set(lineIds)];
  if (unique.length > MAX_POOL_LINES) throw invalidParam(param, `A pool holds at most ${MAX_POOL_LINES} lines.`);
  for (const id of unique) {
    const line = await findLine(id);
    if (!line || line.accountId !== accountId || line.isSandbox) throw invalidParam(param, `No line '${id}' in this account.`);
    lines.push(line);
  }
  return lines;
}

export async function listPools(actor: Actor): Promise<{ data: PoolView[]; has_more: boolean; next_cursor: string | null }> {
  const db = await getDb();
  const pools = await db.pool.findMany({
    where: { accountId: actor.accountId },
    include: { lines: { select: { lineId: true }, orderBy: { addedAt: "asc" } } },
    orderBy: { id: "asc" },
  });
  const visible = visibleTo(actor);
  // A key restricted to some lines sees the pools that hold one of them, with only those lines.
  const data = pools.filter((p) => !actor.lineIds || p.lines.some((l) => visible(l.lineId))).map((p) => view(p, visible));
  return { data, has_more: false, next_cursor: null }; // an account has few pools: one page
}

export async function listAccountPools(accountId: string | null): Promise<(PoolView & { account_id: string })[]> {
  const db = await getDb();
  const pools = await db.pool.findMany({
    where: accountId ? { accountId } : {},
    include: { lines: { select: { lineId: true }, orderBy: { addedAt: "asc" } } },
    orderBy: { id: "asc" },
  });
  return pools.map((p) => ({ ...view(p), account_id: p.accountId }));
}

export async function createPool(accountId: string, input: { name: string; line_ids: string[] }): Promise<PoolView> {
  const parsed = PoolName.safeParse(input.name);
  if (!parsed.success) throw invalidParam("name", `name ${parsed.error.issues[0]?.message ?? "is invalid"}.`);
  const name = parsed.data;
  const lines = await accountLines(accountId, input.line_ids, "line_ids");
  const db = await getDb();
  if (await db.pool.findFirst({ where: { accountId, name } })) throw invalidParam("name", `A pool named '${name}' exists already.`);
  const pool = await db.pool.create({
    data: { id: newId("pool"), accountId, name, lines: { create: lines.map((l) => ({ lineId: l.id })) } },
    include: { lines: { select: { lineId: true }, orderBy: { addedAt: "asc" } } },
  });
  await notifyChange(accountId);
  return view(pool);
}

export async function addPoolLine(accountId: string | null, poolId: string, lineId: string): Promise<PoolView> {
  const pool = await poolOf(accountId, poolId);
  if (pool.lines.length >= MAX_POOL_LINES) throw invalidParam("line_id", `A pool holds at most ${MAX_POOL_LINES} lines.`);
  await accountLines(pool.accountId, [lineId], "line_id");
  await sql(`INSERT INTO "PoolLine" ("poolId", "lineId") VALUES ($1, $2) ON CONFLICT DO NOTHING`, [pool.id, lineId]);
  await notifyChange(pool.accountId);
  return view(await poolOf(accountId, poolId));
}

export async function removePoolLine(accountId: string | null, poolId: string, lineId: string): Promise<PoolView> {
  const pool = await poolOf(accountId, poolId);
  await sql(`DELETE FROM "PoolLine" WHERE "poolId" = $1 AND "lineId" = $2`, [pool.id, lineId]);
  await notifyChange(pool.accountId);
  return view(await poolOf(accountId, poolId));
}

export async function deletePool(accountId: string | null, poolId: string): Promise<{ object: "pool"; id: string; deleted: true }> {
  const pool = await poolOf(accountId, poolId);
  const db = await getDb();
  await db.pool.delete({ where: { id: pool.id } });
  await notifyChange(pool.accountId);
  return { object: "pool", id: pool.id, deleted: true };
}

export async function poolLines(actor: Actor, poolId: string): Promise<{ pool: PoolWithLines; lines: Line[] }> {
  const pool = await poolOf(actor.accountId, poolId, "from");
  const visible = visibleTo(actor);
  const lines: Line[] = [];
  for (const { lineId } of pool.lines) {
    const line = visible(lineId) ? await findLine(lineId) : null;
    if (line?.isActive) lines.push(line);
  }
  if (!lines.length) {
    throw new ApiError("line_not_accessible", pool.lines.length ? `This API key may use none of the lines of pool ${pool.id}.` : `Pool ${pool.id} has no active lines.`, {
      param: "from",
    });
  }
  return { pool, lines };
}

async function stickyLine(actor: Actor, lines: Line[], to: string): Promise<Line | null> {
  const ids = lines.map((l) => l.id);
  const rows = to.startsWith("cht_")
    ? await sql<{ lineId: string }>(`SELECT "lineId" FROM "Chat" WHERE id = $1 AND "accountId" = $2 AND "lineId" = ANY($3::text[])`, [to, actor.accountId, ids])
    : await sql<{ lineId: string }>(
        // A chat with no message yet was opened by a send still on its way: the next send follows it.
        `SELECT "lineId" FROM "Chat" WHERE "accountId" = $1 AND identifier = $2 AND "lineId" = ANY($3::text[])
         ORDER BY "lastMessageAt" DESC NULLS LAST, "createdAt" DESC LIMIT 1`,
        [actor.accountId, normalizeHandle(to), ids],
      );
  return lines.find((l) => l.id === rows[0]?.lineId) ?? null;
}

/** The tighter of its windows; Infinity without budgets. */
async function roomOf(line: Line, now: number): Promise<number> {
  const use = await lineBudgetUse(line.id, policyOf(line), now);
  return Math.min(use.hour.remaining ?? Infinity, use.day.remaining ?? Infinity);
}

export async function choosePoolLine(actor: Actor, poolId: string, to: string, now = Date.now()): Promise<{ line: Line; poolId: string }> {
  const { pool, lines } = await poolLines(actor, poolId);
  const sticky = await stickyLine(actor, lines, to);
  if (sticky) return { line: sticky, poolId: pool.id };
  // A new conversation: a disconnected line is skipped while another can take it.
  const connected = lines.filter((l) => l.status !== "disconnected");
  const candidates = connected.length ? connected : lines;
  const rooms = await Promise.all(candidates.map((l) => roomOf(l, now)));
  const best = Math.max(...rooms);
  const tied = candidates.filter((_, i) => rooms[i] === best);
  if (tied.length === 1) return { line: tied[0]!, poolId: pool.id };
  const [turn] = await sql<{ turn: number }>(`UPDATE "Pool" SET turn = turn + 1 WHERE id = $1 RETURNING turn`, [pool.id]);
  return { line: tied[(turn?.turn ?? 0) % tied.length]!, poolId: pool.id };
}

import { z } from "zod";
import { invalidParam } from "../kernel/errors";

// Keyset pagination with opaque cursors. A cursor encodes the sort value and ID of the last
// item of a page; the next page starts strictly after it, so inserts never shift pages.

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 100;

const LimitSchema = z.coerce
  .number({ message: "must be an integer from 1 to 100" })
  .int("must be an integer from 1 to 100")
  .min(1, "must be an integer from 1 to 100")
  .max(MAX_LIMIT, "must be an integer from 1 to 100")
  .default(DEFAULT_LIMIT);

export const PageQuery = z.object({
  limit: LimitSchema.describe("Items per page, 1 to 100"),
  cursor: z.string().max(500).optional().describe("next_cursor of the previous page"),
});

export interface Page<T> {
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}

type CursorValue = string | number | null;

function encodeCursor(values: CursorValue[]): string {
  return Buffer.from(JSON.stringify(values)).toString("base64url");
}

function decodeCursor(cursor: string, arity: number): CursorValue[] {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
    if (
      Array.isArray(parsed) &&
      parsed.length === arity &&
      parsed.every((v) => v === null || typeof v === "string" || typeof v === "number")
    ) {
      return parsed as CursorValue[];
    }
  } catch {
    // fall through
  }
  throw invalidParam("cursor", "Invalid cursor: pass the next_cursor value of a previous page unchanged.");
}

/** "sortField desc (nulls last), id desc" pages; a DateTime sort field's cursor carries Unix ms, a null one orders by ID only. */
export function keysetDesc(sortField: string | null, cursor: string | undefined, options: { nullable?: boolean } = {}) {
  const orderBy: Record<string, unknown>[] = sortField
    ? [{ [sortField]: options.nullable ? { sort: "desc", nulls: "last" } : "desc" }, { id: "desc" }]
    : [{ id: "desc" }];
  if (!cursor) return { where: {}, orderBy };
  if (!sortField) {
    const [id] = decodeCursor(cursor, 1);
    if (typeof id !== "string") throw invalidParam("cursor", "Invalid cursor.");
    return { where: { id: { lt: id } }, orderBy };
  }
  const [at, id] = decodeCursor(cursor, 2);
  if (typeof id !== "string" || (at !== null && typeof at !== "number")) throw invalidParam("cursor", "Invalid cursor.");
  if (at === null) return { where: { [sortField]: null, id: { lt: id } }, orderBy };
  const t = new Date(at);
  const after = [{ [sortField]: { lt: t } }, { [sortField]: t, id: { lt: id } }];
  return {
    where: { OR: options.nullable ? [...after, { [sortField]: null }] : after },
    orderBy,
  };
}

/** For statements written in SQL rather than through keysetDesc: a cursor of `[ms, id]` for non-null times. */
export function decodeTimeKeyset(cursor: string): { at: number; id: string } {
  const [at, id] = decodeCursor(cursor, 2);
  if (typeof at !== "number" || typeof id !== "string") throw invalidParam("cursor", "Invalid cursor.");
  return { at, id };
}

export function keysetAsc(cursor: string | undefined) {
  const orderBy = [{ id: "asc" as const }];
  if (!cursor) return { where: {}, orderBy };
  const [id] = decodeCursor(cursor, 1);
  if (typeof id !== "string") throw invalidParam("cursor", "Invalid cursor.");
  return { where: { id: { gt: id } }, orderBy };
}

/** From limit+1 fetched rows; `cursorOf` must match the keyset helper used for the query. */
export function toPage<R, T>(rows: R[], limit: number, serialize: (r: R) => T, cursorOf: (r: R) => CursorValue[]): Page<T> {
  const hasMore = rows.length > limit;
  const items = hasMore ? rows.slice(0, limit) : rows;
  const last = items[items.length - 1];
  return {
    data: items.map(serialize),
    has_more: hasMore,
    next_cursor: hasMore && last !== undefined ? encodeCursor(cursorOf(last)) : null,
  };
}

import { config } from "../kernel/config";
import type { Line } from "../generated/prisma/client";
import { normalizeHandle } from "../kernel/handles";
import { processSingleton } from "../kernel/singleton";
import { getDb } from "./index";

// Lines change rarely: cached as briefly as API keys, so a line-scoped read costs no round trip.
const lineCache = processSingleton("line-cache", () => new Map<string, { line: Line; at: number }>());

export function forgetCachedLines(): void {
  lineCache.clear();
}

/** No access check. */
export async function findLine(ref: string): Promise<Line | null> {
  const key = ref.startsWith("ln_") ? ref : normalizeHandle(ref);
  const now = Date.now();
  const hit = lineCache.get(key);
  if (hit && now - hit.at <= config().API_KEY_CACHE_SECONDS * 1000) return hit.line;
  const db = await getDb();
  const line = key.startsWith("ln_")
    ? await db.line.findUnique({ where: { id: key } })
    : await db.line.findUnique({ where: { handle: key } });
  if (line) {
    if (lineCache.size > 10_000) lineCache.clear();
    lineCache.set(key, { line, at: now });
  }
  return line;
}

import type { Actor } from "../../services/access/actor";
import { processSingleton } from "../../kernel/singleton";
import { accountVersion, cachingEnabled } from "../../cache/changes";

// Serialized responses of hot list reads, per API key and query, valid while the account's
// change version is unchanged (see changes.ts) and for at most MAX_AGE_MS as a safety net.

const MAX_AGE_MS = 5_000;
const MAX_ENTRIES = 5_000;

interface Entry {
  version: string;
  at: number;
  json: string;
}

const entries = processSingleton("read-cache", () => new Map<string, Entry>());

function cacheKey(actor: Actor, url: URL): string {
  const params = [...url.searchParams].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `${actor.keyId ?? actor.accountId}|${url.pathname}|${new URLSearchParams(params).toString()}`;
}

/** The JSON text of the response body (without request_id), from cache when unchanged. */
export async function cachedJson(actor: Actor, url: URL, compute: () => Promise<object>): Promise<string> {
  if (!(await cachingEnabled())) return JSON.stringify(await compute());
  const key = cacheKey(actor, url);
  const version = accountVersion(actor.accountId); // taken before reading, so a concurrent write invalidates
  const now = Date.now();
  const hit = entries.get(key);
  if (hit && hit.version === version && now - hit.at <= MAX_AGE_MS) return hit.json;
  const json = JSON.stringify(await compute());
  if (entries.size >= MAX_ENTRIES) entries.clear();
  entries.set(key, { version, at: now, json });
  return json;
}

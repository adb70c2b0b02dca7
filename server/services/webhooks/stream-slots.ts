import type { Actor } from "../access/actor";
import { config } from "../../kernel/config";
import { ApiError } from "../../kernel/errors";
import { processSingleton } from "../../kernel/singleton";

// Each stream holds a connection, a poll loop or a live subscriber as long as its client stays: capped per key and per
// account, counted per app instance (a stream lives on the instance that serves it).

/** Seconds a refused client is told to wait: streams end when their clients go. */
const STREAM_RETRY_AFTER_SECONDS = 30;

const open = processSingleton("stream-slots", () => ({ byKey: new Map<string, number>(), byAccount: new Map<string, number>() }));

const bump = (map: Map<string, number>, id: string, by: number) => {
  const n = (map.get(id) ?? 0) + by;
  if (n > 0) map.set(id, n);
  else map.delete(id);
};

/** Throws 429 too_many_streams; the release is idempotent, to call however the stream ends. */
export function acquireStreamSlot(actor: Actor): () => void {
  const { MAX_STREAMS_PER_KEY: perKey, MAX_STREAMS_PER_ACCOUNT: perAccount } = config();
  const refuse = (what: string, limit: number) =>
    new ApiError("too_many_streams", `Too many open streams for this ${what} (at most ${limit} at once). Close one, or retry later.`, {
      headers: { "Retry-After": String(STREAM_RETRY_AFTER_SECONDS) },
    });
  if (actor.keyId !== null && (open.byKey.get(actor.keyId) ?? 0) >= perKey) throw refuse("API key", perKey);
  if ((open.byAccount.get(actor.accountId) ?? 0) >= perAccount) throw refuse("account", perAccount);
  if (actor.keyId !== null) bump(open.byKey, actor.keyId, 1);
  bump(open.byAccount, actor.accountId, 1);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    if (actor.keyId !== null) bump(open.byKey, actor.keyId, -1);
    bump(open.byAccount, actor.accountId, -1);
  };
}

export function openStreams(accountId: string): number {
  return open.byAccount.get(accountId) ?? 0;
}

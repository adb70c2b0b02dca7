import { config } from "../kernel/config";
import { database, type Query } from "../db";
import { listen } from "../db/pg-listen";
import { processSingleton } from "../kernel/singleton";

// On PostgreSQL a version bump is broadcast with NOTIFY so caches stay correct across instances;
// while this instance's listener is down, caching is off.

const CHANNEL = "relay_changes";
const state = processSingleton("changes", () => ({
  versions: new Map<string, number>(),
  generation: 0,
  listenerHealthy: false,
  listenerStarted: false,
}));

export function accountVersion(accountId: string): string {
  return `${state.generation}.${state.versions.get(accountId) ?? 0}`;
}

function bumpLocal(accountId: string): void {
  state.versions.set(accountId, (state.versions.get(accountId) ?? 0) + 1);
}

export async function cachingEnabled(): Promise<boolean> {
  const db = await database();
  return db.kind === "pglite" || state.listenerHealthy;
}

/** NOTIFY is transactional: other instances hear of the change when it commits. Call `changedLocally` after the commit. */
export async function notifyChangeAtCommit(query: Query, accountIds: Iterable<string>): Promise<void> {
  if ((await database()).kind !== "postgres") return;
  const accounts = [...new Set(accountIds)];
  // ::text: a void column is more than a Prisma transaction's raw query can read back.
  if (accounts.length) await query("SELECT pg_notify($1, a)::text FROM unnest($2::text[]) AS a", [CHANNEL, accounts]);
}

export function changedLocally(accountIds: Iterable<string>): void {
  for (const accountId of new Set(accountIds)) bumpLocal(accountId);
}

export async function notifyChange(accountId: string): Promise<void> {
  bumpLocal(accountId);
  const db = await database();
  if (db.kind === "postgres") {
    await db.prisma.$executeRaw`SELECT pg_notify(${CHANNEL}, ${accountId})`;
  }
}

export async function startChangeListener(): Promise<void> {
  const c = config();
  if (!c.DATABASE_URL || state.listenerStarted) return;
  state.listenerStarted = true;
  await listen(c.DATABASE_URL, CHANNEL, {
    onPayload: bumpLocal,
    onUp: () => {
      state.generation++;
      state.listenerHealthy = true;
    },
    onDown: () => {
      state.listenerHealthy = false;
      state.generation++; // anything cached meanwhile may have missed a change
    },
  });
}

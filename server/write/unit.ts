import { changedLocally, notifyChangeAtCommit } from "../cache/changes";
import { getDb, prismaQuery, type Query, sqlTransaction } from "../db";
import { type LiveEvent, notifyLiveAtCommit, publishLocal } from "../events/live";
import type { Prisma } from "../generated/prisma/client";
import { fire } from "../kernel/signals";
import { fanOut, type WebhookEventData } from "../webhooks/fanout";

// The unit of work: one transaction, with its effects declared inside it. Webhook deliveries
// and the NOTIFYs that tell other instances are written in the same transaction (a committed
// change always has them, a rolled-back one never does); after the commit the live events are
// published in this process, cached reads of the changed accounts are dropped, and the
// signals fire (the webhook sender wakes when deliveries were written). A service or the engine
// never wakes a runner by hand.

export interface Unit {
  /** Statements inside the transaction. */
  query: Query;
  /** Webhook deliveries of these events (one per subscribed webhook); returns how many. */
  fanOut(events: WebhookEventData[]): Promise<number>;
  /** Live events (GET /v1/listen, GraphQL subscriptions), published once the change commits. */
  live(events: readonly LiveEvent[]): void;
  /** Accounts whose cached reads the change makes stale. */
  changed(accountIds: Iterable<string>): void;
  /**
   * A statement to run last, just before the commit: for a lock on a row that concurrent
   * changes share (a busy chat), held for as short a time as the transaction allows.
   */
  last(statement: () => Promise<unknown>): void;
}

interface Effects {
  last: (() => Promise<unknown>)[];
  deliveries: number;
  live: LiveEvent[];
  accounts: Set<string>;
}

function unitOver(query: Query, effects: Effects): Unit {
  return {
    query,
    async fanOut(events) {
      const n = await fanOut(query, events);
      effects.deliveries += n;
      return n;
    },
    live(events) {
      effects.live.push(...events);
    },
    changed(accountIds) {
      for (const id of accountIds) effects.accounts.add(id);
    },
    last(statement) {
      effects.last.push(statement);
    },
  };
}

async function beforeCommit(query: Query, effects: Effects): Promise<void> {
  for (const statement of effects.last) await statement();
  await notifyLiveAtCommit(query, effects.live);
  await notifyChangeAtCommit(query, effects.accounts);
}

function afterCommit(effects: Effects): void {
  changedLocally(effects.accounts);
  publishLocal(effects.live);
  if (effects.deliveries > 0) fire("webhooks.due");
}

const noEffects = (): Effects => ({ last: [], deliveries: 0, live: [], accounts: new Set() });

/** Runs `fn` in a transaction straight through the driver (the fast path); its effects follow the commit. */
export async function unitOfWork<R>(fn: (unit: Unit) => Promise<R>): Promise<R> {
  const effects = noEffects();
  const result = await sqlTransaction(async (query) => {
    const r = await fn(unitOver(query, effects));
    await beforeCommit(query, effects);
    return r;
  });
  afterCommit(effects);
  return result;
}

/**
 * The same over a Prisma transaction, for changes whose other rows are still written with
 * Prisma (sandbox pairing, chat upserts): `unit.tx` is the transaction, `unit.query` runs on it.
 */
export async function prismaUnitOfWork<R>(fn: (unit: Unit & { tx: Prisma.TransactionClient }) => Promise<R>): Promise<R> {
  const effects = noEffects();
  const db = await getDb();
  const result = await db.$transaction(async (tx) => {
    const query = prismaQuery(tx);
    const r = await fn({ ...unitOver(query, effects), tx });
    await beforeCommit(query, effects);
    return r;
  });
  afterCommit(effects);
  return result;
}

import { changedLocally, notifyChangeAtCommit } from "../cache/changes";
import { getDb, prismaQuery, type Query, sqlTransaction } from "../db";
import { type LiveEvent, notifyLiveAtCommit, publishLocal } from "../events/live";
import type { Prisma } from "../generated/prisma/client";
import { fire } from "../kernel/signals";
import { fanOut, type WebhookEventData } from "../webhooks/fanout";
import { type HandedDelivery, localSender } from "../webhooks/handoff";

// The unit of work (docs/architecture.md, "One write path"): deliveries and NOTIFYs are written
// in the transaction, so a rolled-back change never has them; the rest follows the commit.

export interface Unit {
  query: Query;
  /** Returns how many deliveries were written. */
  fanOut(events: WebhookEventData[]): Promise<number>;
  live(events: readonly LiveEvent[]): void;
  /** Accounts whose cached reads the change makes stale. */
  changed(accountIds: Iterable<string>): void;
  /** Runs just before the commit: a lock on a row concurrent changes share (a busy chat) is held briefly. */
  last(statement: () => Promise<unknown>): void;
}

interface Effects {
  last: (() => Promise<unknown>)[];
  deliveries: number;
  /** Stored claimed for this process's sender, given to it at the commit. */
  handed: HandedDelivery[];
  live: LiveEvent[];
  accounts: Set<string>;
}

function unitOver(query: Query, effects: Effects): Unit {
  return {
    query,
    async fanOut(events) {
      const n = await fanOut(query, events, effects.handed);
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
  if (effects.handed.length) localSender()?.take(effects.handed);
  if (effects.deliveries > effects.handed.length) fire("webhooks.due");
}

const noEffects = (): Effects => ({ last: [], deliveries: 0, handed: [], live: [], accounts: new Set() });

/** A rolled-back unit gives back its sender slots; should the commit have happened after all, the leases run out. */
async function committed<R>(effects: Effects, transaction: Promise<R>): Promise<R> {
  try {
    const result = await transaction;
    afterCommit(effects);
    return result;
  } catch (err) {
    if (effects.handed.length) localSender()?.unreserve(effects.handed);
    throw err;
  }
}

export async function unitOfWork<R>(fn: (unit: Unit) => Promise<R>): Promise<R> {
  const effects = noEffects();
  return committed(
    effects,
    sqlTransaction(async (query) => {
      const r = await fn(unitOver(query, effects));
      await beforeCommit(query, effects);
      return r;
    }),
  );
}

/** The same over a Prisma transaction (line status is still written with Prisma). */
export async function prismaUnitOfWork<R>(fn: (unit: Unit & { tx: Prisma.TransactionClient }) => Promise<R>): Promise<R> {
  const effects = noEffects();
  const db = await getDb();
  return committed(
    effects,
    db.$transaction(async (tx) => {
      const query = prismaQuery(tx);
      const r = await fn({ ...unitOver(query, effects), tx });
      await beforeCommit(query, effects);
      return r;
    }),
  );
}

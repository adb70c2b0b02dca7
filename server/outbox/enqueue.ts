import { batcher } from "../kernel/batcher";
import { config } from "../kernel/config";
import { type Query, sql, valuesList } from "../db";
import { type Unit, unitOfWork } from "../write/unit";
import { livePayloads, publishLocal } from "../events/live";
import { processSingleton } from "../kernel/singleton";
import type { OutboxKind } from "./payloads";
import { outboxEvent } from "./queue";
import { lockSends } from "./key-limits";

// How an accepted write enters the outbox: one pending row, committed before the caller answers.

/**
 * Stores a pending item. Concurrent writes share one INSERT and one commit; each caller
 * returns only once its row is committed, so an accepted item is never lost. Live
 * subscribers hear of the accepted items; other instances through a NOTIFY in the same
 * statement (no extra round trip).
 */
export const addToOutbox = processSingleton("outbox-insert", () =>
  batcher<NewOutboxItem, void>(async (items) => {
    // Straight through the driver: the ORM's query compiler costs more CPU than the insert.
    const { text, params } = insertRows(items);
    const events = items.map((i) => outboxEvent(i, i.payload.chat_id, "pending"));
    const notify = livePayloads(events);
    if (notify) {
      const n = params.length;
      await sql(`WITH inserted AS (${text} RETURNING 1) SELECT pg_notify($${n + 1}, p)::text FROM unnest($${n + 2}::text[]) AS p`, [
        ...params,
        notify.channel,
        notify.payloads,
      ]);
    } else {
      await sql(text, params);
    }
    publishLocal(events);
    return items.map(() => undefined);
  }, { maxInFlight: oneStatementAtATimeOnPGlite }),
);

/** The due time of a hold that only a person, or a change of the line's policy, releases (shown as not_before null). */
export const NEVER = new Date("9999-12-31T00:00:00.000Z");

function insertRows(items: NewOutboxItem[]) {
  const { text, params } = valuesList(
    items.map((i) => {
      const [status, availableAt, holdReason] = i.approval
        ? ["held", NEVER, "approval"]
        : i.sendAt
          ? ["held", i.sendAt, "scheduled"]
          : ["pending", null, null];
      return [
        i.id, i.accountId, i.lineId, i.apiKeyId, i.kind, JSON.stringify(i.payload), i.payload.chat_id, i.retryOf ?? null, i.requestId,
        status, availableAt, holdReason, i.poolId ?? null, i.sendAt ?? null,
      ];
    }),
    ["", "", "", "", "", "::jsonb", "", "", "", "", "COALESCE($::timestamptz, now())", "", "", "::timestamptz"],
  );
  return {
    text: `INSERT INTO "OutboxItem" (id, "accountId", "lineId", "apiKeyId", kind, payload, "chatId", "retryOf", "requestId", status, "availableAt", "holdReason", "poolId", "sendAt") VALUES ${text}`,
    params,
  };
}

/**
 * Stores one send of a key with guardrails, in a transaction that first takes the key's lock
 * (so concurrent sends of the key, on any instance, are counted one after the other), then runs
 * `check` (the counted guardrails; it throws to refuse, and nothing is stored), then inserts.
 * `effects` adds what the stored item causes (an approval request's webhook).
 */
export async function addGuardedToOutbox(
  item: NewOutboxItem,
  check: (query: Query) => Promise<void>,
  effects: (unit: Unit) => Promise<void>,
): Promise<void> {
  await unitOfWork(async (unit) => {
    await lockSends(unit.query, item.apiKeyId ?? item.accountId);
    await check(unit.query);
    const { text, params } = insertRows([item]);
    await unit.query(text, params);
    unit.live([outboxEvent(item, item.payload.chat_id, "pending")]);
    await effects(unit);
  });
}

/** Embedded PGlite runs one statement at a time: merge writes that would only queue. */
function oneStatementAtATimeOnPGlite(): number {
  return config().DATABASE_URL ? Infinity : 1;
}

export interface NewOutboxItem {
  id: string;
  accountId: string;
  lineId: string;
  apiKeyId: string | null;
  kind: OutboxKind;
  /** Every kind's payload names its chat. */
  payload: { chat_id: string };
  /** The failed item this one sends again, when it is a retry. */
  retryOf?: string | null;
  /** A scheduled send: held until then. */
  sendAt?: Date | null;
  /** Held until the owner approves it (a key with require_approval). */
  approval?: boolean;
  /** The pool named as `from`, when the line was chosen from one. */
  poolId?: string | null;
  requestId: string;
}

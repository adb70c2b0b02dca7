import { batcher } from "../kernel/batcher";
import { config } from "../kernel/config";
import { sql, valuesList } from "../db";
import { livePayloads, publishLocal } from "../events/live";
import { processSingleton } from "../kernel/singleton";
import type { OutboxKind } from "./payloads";
import { outboxEvent } from "./queue";

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
    const { text, params } = valuesList(
      items.map((i) => [
        i.id, i.accountId, i.lineId, i.apiKeyId, i.kind, JSON.stringify(i.payload), i.payload.chat_id, i.retryOf ?? null, i.requestId,
        i.sendAt ? "held" : "pending", i.sendAt ?? null, i.sendAt ? "scheduled" : null, i.poolId ?? null,
      ]),
      ["", "", "", "", "", "::jsonb", "", "", "", "", "COALESCE($::timestamptz, now())", "", ""],
    );
    const insert = `INSERT INTO "OutboxItem" (id, "accountId", "lineId", "apiKeyId", kind, payload, "chatId", "retryOf", "requestId", status, "availableAt", "holdReason", "poolId") VALUES ${text}`;
    const events = items.map((i) => outboxEvent(i, i.payload.chat_id, "pending"));
    const notify = livePayloads(events);
    if (notify) {
      const n = params.length;
      await sql(`WITH inserted AS (${insert} RETURNING 1) SELECT pg_notify($${n + 1}, p)::text FROM unnest($${n + 2}::text[]) AS p`, [
        ...params,
        notify.channel,
        notify.payloads,
      ]);
    } else {
      await sql(insert, params);
    }
    publishLocal(events);
    return items.map(() => undefined);
  }, { maxInFlight: oneStatementAtATimeOnPGlite }),
);

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
  /** The pool named as `from`, when the line was chosen from one. */
  poolId?: string | null;
  requestId: string;
}

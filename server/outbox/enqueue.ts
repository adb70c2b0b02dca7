import { batcher } from "../kernel/batcher";
import { config } from "../kernel/config";
import { type Query, sql, valuesList } from "../db";
import { type Unit, unitOfWork } from "../write/unit";
import { livePayloads, publishLocal } from "../events/live";
import { processSingleton } from "../kernel/singleton";
import type { OutboxKind } from "./payloads";
import { outboxEvent } from "./queue";
import { lockSends } from "../policy/key-send-limits";
import { NEVER } from "../policy/hold-reasons";

/** Concurrent writes share one INSERT and commit; each caller returns once its row is committed. */
export const addToOutbox = processSingleton("outbox-insert", () =>
  batcher<NewOutboxItem, void>(async (items) => {
    // Straight through the driver: the ORM's query compiler costs more CPU than the insert. Other
    // instances hear of the items through a NOTIFY in the same statement.
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

/** Under the key's lock, so `check` (it throws to refuse) counts concurrent sends of the key one after the other. */
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

// Embedded PGlite runs one statement at a time: merge writes that would only queue.
function oneStatementAtATimeOnPGlite(): number {
  return config().DATABASE_URL ? Infinity : 1;
}

export interface NewOutboxItem {
  id: string;
  accountId: string;
  lineId: string;
  apiKeyId: string | null;
  kind: OutboxKind;
  payload: { chat_id: string };
  retryOf?: string | null;
  sendAt?: Date | null;
  approval?: boolean;
  poolId?: string | null;
  requestId: string;
}

import { randomUUID } from "node:crypto";
import { sql, valuesList } from "../../db";
import { batcher } from "../../kernel/batcher";
import { processSingleton } from "../../kernel/singleton";
import type { OutgoingAction, OutgoingMessage, OutgoingReaction, OutgoingTyping, Platform, SendResult } from "../types";

// Honours the idempotency key durably (its own table, like a real platform's records): a retried send of an accepted
// item, even after a crash, returns the first GUID.

const TEST_RECIPIENTS = {
  /** Always fails permanently. */
  unreachable: "+15005550001",
  /** Fails transiently twice per outbox item, then succeeds. */
  flaky: "+15005550002",
} as const;

const FLAKY_FAILURES = 2;

const state = processSingleton("simulated-platform", () => ({ attempts: new Map<string, number>() }));

interface Recorded {
  guid: string;
  sentAt: number;
}

const record = processSingleton("simulated-platform-record", () =>
  batcher<string, Recorded>(async (keys) => {
    const now = new Date();
    const { text, params } = valuesList([...new Set(keys)].map((key) => [key, randomUUID().toUpperCase(), now]));
    const rows = await sql<{ idempotencyKey: string; guid: string; sentAt: Date }>(
      `INSERT INTO "SimulatedSend" ("idempotencyKey", guid, "sentAt") VALUES ${text}
       ON CONFLICT ("idempotencyKey") DO UPDATE SET guid = "SimulatedSend".guid
       RETURNING "idempotencyKey", guid, "sentAt"`,
      params,
    );
    const byKey = new Map(rows.map((r) => [r.idempotencyKey, { guid: r.guid, sentAt: new Date(r.sentAt).getTime() }]));
    return keys.map((key) => {
      const recorded = byKey.get(key);
      if (!recorded) throw new Error(`simulated send ${key} was not recorded`);
      return recorded;
    });
  }),
);

async function accept(action: OutgoingAction): Promise<SendResult> {
  if (action.to === TEST_RECIPIENTS.unreachable) {
    return { ok: false, permanent: true, reason: "recipient is not reachable on this service" };
  }
  if (action.to === TEST_RECIPIENTS.flaky) {
    const n = (state.attempts.get(action.idempotencyKey) ?? 0) + 1;
    state.attempts.set(action.idempotencyKey, n);
    if (n <= FLAKY_FAILURES) return { ok: false, permanent: false, reason: `temporary platform error (attempt ${n})` };
    state.attempts.delete(action.idempotencyKey);
  }
  return { ok: true, ...(await record(action.idempotencyKey)) };
}

/** Another instance may have set one. */
const REACHABILITY_CACHE_MS = 2_000;
const reachability = processSingleton("simulated-reachability", () => new Map<string, { at: number; noIMessage: Set<string> }>());

async function withoutIMessage(lineHandle: string): Promise<Set<string>> {
  const cached = reachability.get(lineHandle);
  if (cached && Date.now() - cached.at < REACHABILITY_CACHE_MS) return cached.noIMessage;
  const rows = await sql<{ handle: string }>(`SELECT handle FROM "SimulatedReachability" WHERE "lineHandle" = $1 AND NOT imessage`, [lineHandle]);
  const noIMessage = new Set(rows.map((r) => r.handle));
  if (reachability.size > 10_000) reachability.clear();
  reachability.set(lineHandle, { at: Date.now(), noIMessage });
  return noIMessage;
}

export async function setSimulatedReachability(lineHandle: string, handle: string, imessage: boolean): Promise<void> {
  await sql(
    `INSERT INTO "SimulatedReachability" ("lineHandle", handle, imessage) VALUES ($1, $2, $3)
     ON CONFLICT ("lineHandle", handle) DO UPDATE SET imessage = EXCLUDED.imessage`,
    [lineHandle, handle, imessage],
  );
  reachability.delete(lineHandle);
}

/** By iMessage refused to a contact without iMessage, as a real Mac refuses it. */
async function sendMessage(message: OutgoingMessage): Promise<SendResult> {
  if (message.service !== "sms" && !message.isGroup && (await withoutIMessage(message.lineHandle)).has(message.to)) {
    return { ok: false, permanent: true, notIMessage: true, reason: "the recipient is not registered with iMessage" };
  }
  const result = await accept(message);
  return result.ok && message.service ? { ...result, service: message.service } : result;
}

export const simulatedPlatform: Platform = {
  name: "simulated",
  sendMessage,
  sendReaction: (reaction: OutgoingReaction) => accept(reaction),
  sendTyping: (typing: OutgoingTyping) => accept(typing),
  sendReceipt: (receipt: OutgoingAction) => accept(receipt),
};

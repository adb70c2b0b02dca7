import { randomUUID } from "node:crypto";
import { processSingleton } from "../singleton";
import type { OutgoingAction, OutgoingMessage, OutgoingReaction, OutgoingTyping, Platform, SendResult } from "./types";

// The built-in simulated platform: accepts every send at once, except two documented test
// recipients. It honours the idempotency key: a retried send of an accepted item returns the
// same GUID instead of sending again.

export const TEST_RECIPIENTS = {
  /** Always fails permanently. */
  unreachable: "+15005550001",
  /** Fails transiently twice per outbox item, then succeeds. */
  flaky: "+15005550002",
} as const;

const FLAKY_FAILURES = 2;

const state = processSingleton("simulated-platform", () => ({
  accepted: new Map<string, { guid: string; sentAt: number }>(),
  attempts: new Map<string, number>(),
}));

/** Every kind of send goes through here: idempotency and the test recipients. */
async function accept(action: OutgoingAction): Promise<SendResult> {
  const done = state.accepted.get(action.idempotencyKey);
  if (done) return { ok: true, ...done };
  if (action.to === TEST_RECIPIENTS.unreachable) {
    return { ok: false, permanent: true, reason: "recipient is not reachable on this service" };
  }
  if (action.to === TEST_RECIPIENTS.flaky) {
    const n = (state.attempts.get(action.idempotencyKey) ?? 0) + 1;
    state.attempts.set(action.idempotencyKey, n);
    if (n <= FLAKY_FAILURES) return { ok: false, permanent: false, reason: `temporary platform error (attempt ${n})` };
  }
  const result = { guid: randomUUID().toUpperCase(), sentAt: Date.now() };
  state.accepted.set(action.idempotencyKey, result);
  if (state.accepted.size > 200_000) state.accepted.clear();
  return { ok: true, ...result };
}

export const simulatedPlatform: Platform = {
  name: "simulated",
  sendMessage: (message: OutgoingMessage) => accept(message),
  sendReaction: (reaction: OutgoingReaction) => accept(reaction),
  sendTyping: (typing: OutgoingTyping) => accept(typing),
  sendReceipt: (receipt: OutgoingAction) => accept(receipt),
};

export function platformFor(name: string): Platform {
  if (name === "simulated") return simulatedPlatform;
  throw new Error(`no platform named ${name}`);
}

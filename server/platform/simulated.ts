import { randomUUID } from "node:crypto";
import { processSingleton } from "../singleton";
import type { OutgoingMessage, Platform, SendResult } from "./types";

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

export const simulatedPlatform: Platform = {
  name: "simulated",
  async sendMessage(message: OutgoingMessage): Promise<SendResult> {
    const done = state.accepted.get(message.idempotencyKey);
    if (done) return { ok: true, ...done };
    if (message.to === TEST_RECIPIENTS.unreachable) {
      return { ok: false, permanent: true, reason: "recipient is not reachable on this service" };
    }
    if (message.to === TEST_RECIPIENTS.flaky) {
      const n = (state.attempts.get(message.idempotencyKey) ?? 0) + 1;
      state.attempts.set(message.idempotencyKey, n);
      if (n <= FLAKY_FAILURES) return { ok: false, permanent: false, reason: `temporary platform error (attempt ${n})` };
    }
    const result = { guid: randomUUID().toUpperCase(), sentAt: Date.now() };
    state.accepted.set(message.idempotencyKey, result);
    if (state.accepted.size > 200_000) state.accepted.clear();
    return { ok: true, ...result };
  },
};

export function platformFor(name: string): Platform {
  if (name === "simulated") return simulatedPlatform;
  throw new Error(`no platform named ${name}`);
}

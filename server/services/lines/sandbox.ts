import { randomBytes } from "node:crypto";
import type { Actor } from "../access/actor";
import { config } from "../../kernel/config";
import { getDb } from "../../db";
import { peek } from "../access/rate-limit";
import { notifyChange } from "../../cache/changes";
import { sandboxLine } from "./sandbox-line";
import { requireSandboxOwner } from "./sandbox-state";

export const DAY_MS = 86_400_000;
export const sandboxQuotaBucket = (accountId: string) => `sandbox:${accountId}`;

const CODE_ALPHABET = "ABCDEFGHJKMNPQRSTVWXYZ23456789";

function newActivationCode(): string {
  const bytes = randomBytes(8);
  let code = "";
  for (let i = 0; i < 8; i++) code += CODE_ALPHABET[bytes[i]! % CODE_ALPHABET.length];
  return `RELAY-${code}`;
}

/** Activation codes match case- and whitespace-insensitively. */
export function normalizeActivationCode(text: string): string {
  return text.trim().toUpperCase().replace(/\s+/g, "");
}

export async function getSandbox(actor: Actor, now = Date.now()) {
  requireSandboxOwner(actor);
  const db = await getDb();
  const [line, state, usage] = await Promise.all([
    sandboxLine(),
    db.sandboxState.findUnique({ where: { accountId: actor.accountId } }),
    peek(sandboxQuotaBucket(actor.accountId), config().SANDBOX_DAILY_LIMIT, DAY_MS, now),
  ]);
  return {
    object: "sandbox" as const,
    status: state ? (state.status === "active" ? ("active" as const) : ("pending" as const)) : ("missing" as const),
    activation_code: state?.activationCode ?? null,
    sandbox_line_handle: line.handle,
    contact_identifier: state?.contactIdentifier ?? null,
    activated_at: state?.activatedAt?.getTime() ?? null,
    usage: { used: usage.count, limit: usage.limit, remaining: usage.remaining, resets_at: usage.resetAt },
  };
}

export async function activateSandbox(actor: Actor) {
  requireSandboxOwner(actor);
  const db = await getDb();
  for (let attempt = 0; ; attempt++) {
    try {
      await db.sandboxState.upsert({
        where: { accountId: actor.accountId },
        create: { accountId: actor.accountId, status: "pending", activationCode: newActivationCode() },
        update: {},
      });
      break;
    } catch (err) {
      if (attempt >= 3) throw err; // a code collision is ~1e-12; retry a few times regardless
    }
  }
  await notifyChange(actor.accountId);
  return getSandbox(actor);
}

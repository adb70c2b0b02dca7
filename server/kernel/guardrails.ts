import { z } from "zod";
import { normalizeHandle } from "./handles";

// The guardrails of an API key as data: their shape, the owner's input, the stored columns.
// The rules that apply them are in server/services/access/guardrails.ts (docs/agents.md).

export interface Guardrails {
  /** Normalized handles and chat IDs the key may send to; null: anyone the line may reach. */
  allow_to: string[] | null;
  require_approval: boolean;
  max_sends_per_chat_without_reply: number | null;
  max_sends_per_day: number | null;
}

const MAX_ALLOW_TO = 1_000;
const MAX_LIMIT = 1_000_000;

const limit = z.number().int("must be a whole number").min(1, "must be at least 1").max(MAX_LIMIT).nullable();

/** The guardrails as the owner sets them (dashboard, GraphQL, operator CLI): any subset, null clears one. */
export const GuardrailsInput = z
  .object({
    allow_to: z
      .array(z.string().trim().min(1, "must not be empty").max(320))
      .min(1, "list at least one contact or chat ID, or pass null to allow everyone")
      .max(MAX_ALLOW_TO, `at most ${MAX_ALLOW_TO} entries`)
      .nullable()
      .describe("Contacts (phone numbers in E.164, emails, handles) and cht_ chat IDs the key may send to; null: no restriction"),
    require_approval: z.boolean().describe("Hold every send by the key until the owner approves it"),
    max_sends_per_chat_without_reply: limit.describe("Sends to one chat since its contact last wrote, at most; null: no limit"),
    max_sends_per_day: limit.describe("Sends in any 24 hours, at most; null: no limit"),
  })
  .partial()
  .strict();
export type GuardrailsInput = z.output<typeof GuardrailsInput>;

/** The stored columns of an ApiKey for these guardrails. */
export interface GuardrailColumns {
  allowTo: string[];
  requireApproval: boolean;
  maxSendsPerChatWithoutReply: number | null;
  maxSendsPerDay: number | null;
}

/** An allow-list entry as sends are compared with it: a chat ID as is, a contact normalized. */
function allowEntry(raw: string): string {
  const value = raw.trim();
  return value.startsWith("cht_") ? value : normalizeHandle(value);
}

/** The columns an input changes (absent fields keep their value). */
function guardrailColumns(input: GuardrailsInput): Partial<GuardrailColumns> {
  const out: Partial<GuardrailColumns> = {};
  if (input.allow_to !== undefined) out.allowTo = input.allow_to ? [...new Set(input.allow_to.map(allowEntry))] : [];
  if (input.require_approval !== undefined) out.requireApproval = input.require_approval;
  if (input.max_sends_per_chat_without_reply !== undefined) out.maxSendsPerChatWithoutReply = input.max_sends_per_chat_without_reply;
  if (input.max_sends_per_day !== undefined) out.maxSendsPerDay = input.max_sends_per_day;
  return out;
}

/** The columns of a key without guardrails. */
export const UNGUARDED: GuardrailColumns = { allowTo: [], requireApproval: false, maxSendsPerChatWithoutReply: null, maxSendsPerDay: null };

/** A key's columns after an input changes some of them. */
export function withGuardrails(current: GuardrailColumns, input: GuardrailsInput): GuardrailColumns {
  return { ...current, ...guardrailColumns(input) };
}

/** The guardrails of a key's columns, or null when it has none (an unguarded key). */
export function guardrailsOf(key: GuardrailColumns): Guardrails | null {
  const g: Guardrails = {
    allow_to: key.allowTo.length ? key.allowTo : null,
    require_approval: key.requireApproval,
    max_sends_per_chat_without_reply: key.maxSendsPerChatWithoutReply,
    max_sends_per_day: key.maxSendsPerDay,
  };
  return g.allow_to || g.require_approval || g.max_sends_per_chat_without_reply !== null || g.max_sends_per_day !== null ? g : null;
}

/** The guardrails as the owner reads them (always every field). */
export function serializeGuardrails(key: GuardrailColumns): Guardrails {
  return guardrailsOf(key) ?? { allow_to: null, require_approval: false, max_sends_per_chat_without_reply: null, max_sends_per_day: null };
}

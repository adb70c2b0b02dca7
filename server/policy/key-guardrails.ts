import { z } from "zod";
import { ApiError } from "../kernel/errors";
import { normalizeHandle } from "../kernel/handles";

// The checks sit below the send service and the outbox: a send is checked at accept, and again
// when SMS fallback moves it to another line and chat. The counted ones: key-send-limits.ts.

export interface Guardrails {
  /** Normalized handles and chat IDs; null: anyone the line may reach. */
  allow_to: string[] | null;
  require_approval: boolean;
  max_sends_per_chat_without_reply: number | null;
  max_sends_per_day: number | null;
}

const MAX_ALLOW_TO = 1_000;
const MAX_LIMIT = 1_000_000;

const limit = z.number().int("must be a whole number").min(1, "must be at least 1").max(MAX_LIMIT).nullable();

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

export interface GuardrailColumns {
  allowTo: string[];
  requireApproval: boolean;
  maxSendsPerChatWithoutReply: number | null;
  maxSendsPerDay: number | null;
}

function allowEntry(raw: string): string {
  const value = raw.trim();
  return value.startsWith("cht_") ? value : normalizeHandle(value);
}

function guardrailColumns(input: GuardrailsInput): Partial<GuardrailColumns> {
  const out: Partial<GuardrailColumns> = {};
  if (input.allow_to !== undefined) out.allowTo = input.allow_to ? [...new Set(input.allow_to.map(allowEntry))] : [];
  if (input.require_approval !== undefined) out.requireApproval = input.require_approval;
  if (input.max_sends_per_chat_without_reply !== undefined) out.maxSendsPerChatWithoutReply = input.max_sends_per_chat_without_reply;
  if (input.max_sends_per_day !== undefined) out.maxSendsPerDay = input.max_sends_per_day;
  return out;
}

export const UNGUARDED: GuardrailColumns = { allowTo: [], requireApproval: false, maxSendsPerChatWithoutReply: null, maxSendsPerDay: null };

export function withGuardrails(current: GuardrailColumns, input: GuardrailsInput): GuardrailColumns {
  return { ...current, ...guardrailColumns(input) };
}

/** Null for a key without guardrails. */
export function guardrailsOf(key: GuardrailColumns): Guardrails | null {
  const g: Guardrails = {
    allow_to: key.allowTo.length ? key.allowTo : null,
    require_approval: key.requireApproval,
    max_sends_per_chat_without_reply: key.maxSendsPerChatWithoutReply,
    max_sends_per_day: key.maxSendsPerDay,
  };
  return g.allow_to || g.require_approval || g.max_sends_per_chat_without_reply !== null || g.max_sends_per_day !== null ? g : null;
}

export function serializeGuardrails(key: GuardrailColumns): Guardrails {
  return guardrailsOf(key) ?? { allow_to: null, require_approval: false, max_sends_per_chat_without_reply: null, max_sends_per_day: null };
}

/** A request's caller (an Actor), or the key that made an outbox item. */
export interface Sender {
  /** Null for the owner's dashboard session. */
  keyId: string | null;
  /** Null: every line of the account. */
  lineIds: ReadonlySet<string> | null;
  guardrails: Guardrails | null;
}

export interface GuardedChat {
  id: string;
  identifier: string;
  isGroup: boolean;
  pausedAt: Date | null;
}

const notAllowed = (to: string) =>
  new ApiError("recipient_not_allowed", `This API key may not send to ${to}: it is not on the key's allow_to list.`, { param: "to" });

/** allow_to for a contact a send would open a chat with: refused before the chat is stored. */
export function checkRecipientName(sender: Sender, to: string): void {
  const allow = sender.guardrails?.allow_to;
  if (!allow) return;
  const value = to.trim();
  if (value.startsWith("cht_")) return;
  if (!allow.includes(normalizeHandle(value))) throw notAllowed(value);
}

/** allow_to and human takeover; the owner's sends (no guardrails) pass a pause. */
export function checkChat(sender: Sender, chat: GuardedChat): void {
  const g = sender.guardrails;
  if (!g) return;
  if (g.allow_to && !g.allow_to.includes(chat.id) && !g.allow_to.includes(chat.identifier)) throw notAllowed(chat.isGroup ? chat.id : chat.identifier);
  if (chat.pausedAt) {
    throw new ApiError(
      "chat_paused",
      `The owner has paused automated sending in chat ${chat.id} (since ${chat.pausedAt.toISOString()}): a person is answering. Sends resume once the owner resumes the chat.`,
      { param: "to" },
    );
  }
}

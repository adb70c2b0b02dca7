import { z } from "zod";
import { ApiError } from "../kernel/errors";
import { type QuietHours, QuietHoursSchema } from "./quiet-hours";

// Stored as set (Line.sendPolicy, only the fields an operator gave): a field left out takes its
// default for the line's service, so a line moved from SMS to iMessage gains the iMessage budgets.

const budget = z.number().int("must be a whole number").min(0, "must not be negative").max(100_000, "must be at most 100000").nullable();

/** What an operator may set: a field given replaces it; null clears a budget or quiet hours. */
export const SendPolicyInput = z
  .object({
    contact_first: z.boolean().describe("Sends only to contacts that messaged the line first (the contact-first rule). Default true"),
    new_contacts_per_hour: budget.describe("Sends that open a conversation with a new contact, per sliding hour; null: no limit"),
    new_contacts_per_day: budget.describe("The same per sliding 24 hours; null: no limit"),
    quiet_hours: QuietHoursSchema.nullable().describe("A daily window (local time in an IANA zone) during which new messages wait"),
    rate_per_second: z.number().positive("must be above 0").max(100, "must be at most 100").describe("How many sends per second a provider line starts, at most"),
  })
  .partial()
  .strict();
export type SendPolicyInput = z.output<typeof SendPolicyInput>;

const StoredPolicy = SendPolicyInput.omit({ rate_per_second: true });

export interface SendPolicy {
  contact_first: boolean;
  new_contacts_per_hour: number | null;
  new_contacts_per_day: number | null;
  quiet_hours: QuietHours | null;
  rate_per_second: number;
}

/** Sendblue's published per-line limits: Apple flags iMessage accounts that message too many new people. */
const IMESSAGE_BUDGETS = { new_contacts_per_hour: 10, new_contacts_per_day: 50 } as const;

function defaultPolicy(service: string): Omit<SendPolicy, "rate_per_second"> {
  const budgets = service === "sms" ? { new_contacts_per_hour: null, new_contacts_per_day: null } : IMESSAGE_BUDGETS;
  return { contact_first: true, ...budgets, quiet_hours: null };
}

export interface PolicyHolder {
  service: string;
  sendPolicy: unknown;
  sendRatePerSecond: number;
}

const parsed = new WeakMap<PolicyHolder, SendPolicy>();

export function policyOf(line: PolicyHolder): SendPolicy {
  const cached = parsed.get(line);
  if (cached) return cached;
  // A stored policy that no longer parses (a field renamed) falls back to defaults, never fails a send.
  const stored = StoredPolicy.safeParse(line.sendPolicy).data ?? {};
  const policy: SendPolicy = { ...defaultPolicy(line.service), ...stored, rate_per_second: line.sendRatePerSecond > 0 ? line.sendRatePerSecond : 1 };
  parsed.set(line, policy);
  return policy;
}

export function mergePolicy(current: unknown, change: SendPolicyInput): { stored: z.output<typeof StoredPolicy>; rate: number | undefined } {
  const { rate_per_second: rate, ...rest } = change;
  const before = StoredPolicy.safeParse(current).data ?? {};
  return { stored: { ...before, ...rest }, rate };
}

export const paceMs = (line: PolicyHolder): number => Math.ceil(1000 / policyOf(line).rate_per_second);

export function budgetsApply(policy: SendPolicy): boolean {
  return !policy.contact_first && (policy.new_contacts_per_hour !== null || policy.new_contacts_per_day !== null);
}

export function mayHold(policy: SendPolicy): boolean {
  return policy.quiet_hours !== null || budgetsApply(policy);
}

/** The contact-first rule: the line sends only into a chat that has messaged it (`chat`: null when there is none). */
export function checkContactFirst<C extends { isGroup: boolean; hasReceivedInbound: boolean }>(
  line: { handle: string },
  chat: C | null,
  to: string,
): asserts chat is C {
  if (chat?.hasReceivedInbound) return;
  throw new ApiError(
    "contact_has_not_messaged",
    chat?.isGroup
      ? "This group chat has not sent a message to this line yet; you can send once it has."
      : `${to} has not messaged line ${line.handle} yet. Contacts must message a line before it can message them.`,
    { param: "to" },
  );
}

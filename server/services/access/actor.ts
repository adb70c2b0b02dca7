import type { Guardrails } from "../../kernel/guardrails";
import type { Scope } from "./scopes";

/** Who is calling: resolved once per request by the transport, passed to every service. */
export interface Actor {
  accountId: string;
  /** The API key used, or null for a dashboard session. */
  keyId: string | null;
  scopes: ReadonlySet<Scope>;
  /** Lines the caller may touch besides the sandbox line; null means every line of the account. */
  lineIds: ReadonlySet<string> | null;
  /** Requests per hour allowed for this key. */
  rateLimitPerHour: number;
  /** Whether the account has an owning user (required for the sandbox). */
  hasOwner: boolean;
  /** The key's guardrails (an automated sender), or null: a dashboard session or an unguarded key. */
  guardrails: Guardrails | null;
  /** The signed-in user, for a dashboard session. */
  userId?: string;
}

import type { Guardrails } from "../../policy/key-guardrails";
import type { Scope } from "./scopes";

/** Who is calling: resolved once per request by the transport, passed to every service. */
export interface Actor {
  accountId: string;
  keyId: string | null;
  scopes: ReadonlySet<Scope>;
  /** Lines the caller may touch besides the sandbox line; null means every line of the account. */
  lineIds: ReadonlySet<string> | null;
  rateLimitPerHour: number;
  /** Whether the account has an owning user (required for the sandbox). */
  hasOwner: boolean;
  guardrails: Guardrails | null;
  userId?: string;
}

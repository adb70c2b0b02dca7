import type { Actor } from "../../services/access/actor";
import { ApiError } from "../../kernel/errors";

// Owner-only mutations (the dashboard's session, never an API key): a leaked key, whatever its
// scopes, must not point a line at another server, lift its budgets or regroup its senders.

export const OWNER_ONLY =
  "Only for the account's owner: the dashboard's signed-in session (which also authenticates GraphQL); API keys are refused, whatever their scopes.";

export const isOwnerSession = (actor: Actor) => actor.keyId === null;

/** The owner's account ID, or session_required for an API key (`what` was refused; `why` a key may not). */
export function ownerAccount(actor: Actor, what: string, why: string): string {
  if (!isOwnerSession(actor)) {
    throw new ApiError(
      "session_required",
      `${what} is for the account's owner: sign in to the dashboard (its session also authenticates GraphQL). ${why}`,
    );
  }
  return actor.accountId;
}

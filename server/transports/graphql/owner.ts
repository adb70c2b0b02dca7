import type { Actor } from "../../services/access/actor";
import { ApiError } from "../../kernel/errors";

// Owner-only mutations: the dashboard's signed-in session, never an API key. The schema has no
// scope that changes lines (lines:read only reads them), and managing lines, their pools and
// send policies is the session's alone: a leaked key, whatever its scopes, must not be able to
// point a line at another server, lift its new-contact budgets or regroup its senders.

/** Said in the description of every owner-only field. */
export const OWNER_ONLY =
  "Only for the account's owner: the dashboard's signed-in session (which also authenticates GraphQL); API keys are refused, whatever their scopes.";

/** Whether the caller is the account's owner (a dashboard session), not an API key. */
export const isOwnerSession = (actor: Actor) => actor.keyId === null;

/**
 * The owner's account ID, or session_required for an API key. `what` says what was refused
 * ("Connecting or testing a line"); `why` what a key must not do.
 */
export function ownerAccount(actor: Actor, what: string, why: string): string {
  if (!isOwnerSession(actor)) {
    throw new ApiError(
      "session_required",
      `${what} is for the account's owner: sign in to the dashboard (its session also authenticates GraphQL). ${why}`,
    );
  }
  return actor.accountId;
}

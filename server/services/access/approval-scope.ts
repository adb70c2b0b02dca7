import { ApiError } from "../../kernel/errors";
import type { Guardrails } from "../../policy/key-guardrails";

// Guardrails of an API key handed to an automated sender (an agent): whom it may write to,
// whether a person approves each send, how often it may write to a chat that has not answered,
// and how much it may send a day. They are rules of the key, so they hold on every transport
// (REST, GraphQL, MCP, the client and CLI): the send service checks them before anything is
// stored, and a refused send leaves nothing behind. docs/agents.md explains them. The checks
// live below the services, as SMS fallback runs them again at the claim: a chat's in
// server/kernel/guardrails.ts, the counted ones in server/outbox/key-limits.ts. Here: who approves.

/**
 * The scope that approves held sends and pauses or resumes chats: the supervisor's. A key with
 * any guardrail (an automated sender) can never hold it, or it could approve its own sends or
 * lift a pause the owner set.
 */
export const APPROVE_SCOPE = "outbox:approve";

export function checkApprovalScope(scopes: readonly string[], guardrails: Guardrails | null): void {
  if (guardrails && scopes.includes(APPROVE_SCOPE)) {
    throw new ApiError(
      "invalid_parameter_value",
      `A key with guardrails cannot hold the '${APPROVE_SCOPE}' scope: it could approve its own sends or resume a chat the owner paused.`,
      { param: "scopes" },
    );
  }
}

import { ApiError } from "../../kernel/errors";
import type { Guardrails } from "../../policy/key-guardrails";

/** Approves held sends and pauses or resumes chats: a key with guardrails never holds it, or it could approve its own sends. */
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

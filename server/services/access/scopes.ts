// The 15 API-key scopes of SPEC.md "Authentication", and outbox:approve (extension: approve or
// reject sends held for approval, pause and resume chats; docs/agents.md).
export const SCOPES = [
  "messages:read",
  "messages:write",
  "chats:read",
  "lines:read",
  "reactions:read",
  "reactions:write",
  "typing:read",
  "typing:write",
  "receipts:read",
  "receipts:write",
  "webhooks:read",
  "webhooks:write",
  "outbox:read",
  "files:read",
  "files:write",
  "outbox:approve",
] as const;

export type Scope = (typeof SCOPES)[number];

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}

/** Parses "all" or a comma-separated list; throws with the offending name. */
export function parseScopes(input: string): Scope[] {
  if (input.trim() === "all") return [...SCOPES];
  const names = input.split(",").map((s) => s.trim()).filter(Boolean);
  const bad = names.filter((n) => !isScope(n));
  if (bad.length) throw new Error(`unknown scope(s): ${bad.join(", ")}; valid: all, ${SCOPES.join(", ")}`);
  if (!names.length) throw new Error("at least one scope is required");
  return [...new Set(names)] as Scope[];
}

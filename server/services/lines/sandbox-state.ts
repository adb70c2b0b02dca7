import type { Actor } from "../access/actor";
import { getDb } from "../../db";
import { ApiError } from "../../kernel/errors";

export type SandboxStatus = "missing" | "pending" | "active";

/** The sandbox is for accounts with an owning user (SPEC.md sandbox_requires_owner). */
export function requireSandboxOwner(actor: Actor): void {
  if (!actor.hasOwner) {
    throw new ApiError(
      "sandbox_requires_owner",
      "The sandbox is only available to accounts with an owner. Use a key of an account that has an owning user.",
    );
  }
}

export async function sandboxStatus(accountId: string): Promise<SandboxStatus> {
  const db = await getDb();
  const state = await db.sandboxState.findUnique({ where: { accountId }, select: { status: true } });
  return state ? (state.status === "active" ? "active" : "pending") : "missing";
}

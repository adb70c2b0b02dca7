import { getDb } from "../db";

export type SandboxStatus = "missing" | "pending" | "active";

export async function sandboxStatus(accountId: string): Promise<SandboxStatus> {
  const db = await getDb();
  const state = await db.sandboxState.findUnique({ where: { accountId }, select: { status: true } });
  return state ? (state.status === "active" ? "active" : "pending") : "missing";
}

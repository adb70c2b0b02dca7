import type { Line } from "../../generated/prisma/client";
import { type ApiError, invalidParam } from "../../kernel/errors";
import type { InboundEvent } from "../../platform/inbound-event";
import type { Unit } from "../../write/unit";
import { normalizeActivationCode } from "../lines/sandbox";

// On the shared sandbox line an event is the account's whose phone sent it, or whose activation
// code the text is (which pairs the phone, unpairing it elsewhere: one account per phone).

export interface Routed {
  i: number;
  line: Line;
  event: InboundEvent;
  accountId: string;
}

async function sandboxAccount({ query }: Unit, sender: string, text: string | null, unpaired: string[]): Promise<string | ApiError> {
  if (text) {
    const [pending] = await query<{ accountId: string }>(`SELECT "accountId" FROM "SandboxState" WHERE "activationCode" = $1`, [normalizeActivationCode(text)]);
    if (pending) {
      const others = await query<{ accountId: string }>(
        `UPDATE "SandboxState" SET "contactIdentifier" = NULL, status = 'pending', "activatedAt" = NULL
         WHERE "contactIdentifier" = $1 AND "accountId" <> $2 RETURNING "accountId"`,
        [sender, pending.accountId],
      );
      unpaired.push(...others.map((o) => o.accountId));
      await query(`UPDATE "SandboxState" SET status = 'active', "contactIdentifier" = $2, "activatedAt" = COALESCE("activatedAt", $3) WHERE "accountId" = $1`, [
        pending.accountId,
        sender,
        new Date(),
      ]);
      return pending.accountId;
    }
  }
  const [paired] = await query<{ accountId: string; status: string }>(`SELECT "accountId", status FROM "SandboxState" WHERE "contactIdentifier" = $1`, [sender]);
  if (!paired || paired.status !== "active") {
    return invalidParam("from", `${sender} is not paired with any account's sandbox. Text an activation code to the sandbox number first.`);
  }
  return paired.accountId;
}

export async function routeAccounts(unit: Unit, inputs: { line: Line; event: InboundEvent }[], results: { outcome: string; refusal?: ApiError }[]): Promise<Routed[]> {
  const routed: Routed[] = [];
  const unpaired: string[] = [];
  for (const [i, { line, event }] of inputs.entries()) {
    if (!line.isSandbox || event.type === "delivery") {
      routed.push({ i, line, event, accountId: line.accountId ?? "" });
      continue;
    }
    const account = await sandboxAccount(unit, event.sender, event.type === "message" ? event.text : null, unpaired);
    if (typeof account === "string") routed.push({ i, line, event, accountId: account });
    else results[i] = { outcome: "ignored", refusal: account };
  }
  unit.changed(unpaired);
  return routed;
}

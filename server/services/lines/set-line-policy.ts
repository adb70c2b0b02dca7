import { getDb, type Prisma } from "../../db";
import { forgetCachedLines } from "../../db/line-cache";
import { ApiError } from "../../kernel/errors";
import type { Line } from "../../generated/prisma/client";
import { reconsiderHolds } from "../../outbox/held-items";
import { mergePolicy, policyOf, type SendPolicy, SendPolicyInput } from "../../policy/line-send-policy";
import { notifyChange } from "../../cache/changes";

export { SendPolicyInput };

export const linePolicy = (line: Line): SendPolicy => policyOf(line);

/** `accountId` null: the operator, any account. Sends the old policy held are judged again by the new one. */
export async function setLinePolicy(accountId: string | null, lineId: string, change: SendPolicyInput): Promise<{ line: Line; policy: SendPolicy }> {
  const db = await getDb();
  const line = await db.line.findFirst({ where: { id: lineId, ...(accountId ? { accountId } : {}) } });
  if (!line) throw new ApiError("line_not_found", `No line with ID '${lineId}'.`, { param: "line_id" });
  const { stored, rate } = mergePolicy(line.sendPolicy, change);
  const updated = await db.line.update({
    where: { id: line.id },
    data: { sendPolicy: stored as Prisma.InputJsonObject, ...(rate !== undefined ? { sendRatePerSecond: rate } : {}) },
  });
  forgetCachedLines();
  await reconsiderHolds(line.id);
  if (updated.accountId) await notifyChange(updated.accountId);
  return { line: updated, policy: policyOf(updated) };
}

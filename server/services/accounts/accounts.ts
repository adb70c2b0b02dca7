import { z } from "zod";
import { hashPassword, needsRehash, verifyPassword } from "../access/passwords";
import { getDb } from "../../db";
import { ApiError } from "../../kernel/errors";
import type { Account } from "../../generated/prisma/client";
import { newId } from "../../kernel/ids";
import { throttleAuthAttempt } from "../access/auth-throttle";

export const EmailSchema = z.string().trim().toLowerCase().email("must be an email address").max(320);
const PasswordSchema = z.string().min(8, "must be at least 8 characters").max(200);

export interface CreateAccountInput {
  email: string;
  password?: string;
  /** An account with no owning user: its keys get sandbox_requires_owner on the sandbox. */
  noOwner?: boolean;
  name?: string;
}

export async function createAccount(input: CreateAccountInput): Promise<Account> {
  const email = EmailSchema.parse(input.email);
  const password = input.password === undefined ? undefined : PasswordSchema.parse(input.password);
  const db = await getDb();
  if (await db.account.findUnique({ where: { email }, select: { id: true } })) {
    throw new ApiError("invalid_parameter_value", `An account with email ${email} already exists.`, { param: "email" });
  }
  const passwordHash = password ? await hashPassword(password) : null;
  return db.$transaction(async (tx) => {
    let ownerId: string | null = null;
    if (!input.noOwner) {
      const user =
        (await tx.user.findUnique({ where: { email } })) ??
        (await tx.user.create({ data: { id: newId("user"), email, passwordHash, name: input.name ?? null } }));
      ownerId = user.id;
    }
    return tx.account.create({ data: { id: newId("account"), email, name: input.name ?? null, ownerId } });
  });
}

export async function findAccountByEmail(email: string): Promise<Account> {
  const db = await getDb();
  const account = await db.account.findUnique({ where: { email: EmailSchema.parse(email) } });
  if (!account) throw new ApiError("invalid_parameter_value", `No account with email ${email}.`, { param: "account" });
  return account;
}

export const SignUpBody = z.object({
  email: EmailSchema,
  password: PasswordSchema,
  name: z.string().trim().max(100).optional(),
});

export async function signUp(input: z.output<typeof SignUpBody>, client: { ip: string | null }): Promise<Account> {
  await throttleAuthAttempt("sign_up", { ip: client.ip, email: input.email });
  return createAccount({ email: input.email, password: input.password, name: input.name });
}

// Compared against when the email is unknown, so a wrong email costs the same time as a wrong
// password and sign-in does not reveal which addresses have accounts.
let decoyHash: Promise<string> | undefined;

export async function verifyCredentials(email: string, password: string): Promise<{ userId: string; accountId: string; email: string } | null> {
  const parsed = EmailSchema.safeParse(email);
  const db = await getDb();
  const user = parsed.success
    ? await db.user.findUnique({ where: { email: parsed.data }, include: { accounts: { orderBy: { createdAt: "asc" }, take: 1 } } })
    : null;
  if (!user?.passwordHash) {
    decoyHash ??= hashPassword("decoy password for unknown users");
    await verifyPassword(password, await decoyHash);
    return null;
  }
  if (!(await verifyPassword(password, user.passwordHash))) return null;
  if (needsRehash(user.passwordHash)) {
    // Upgraded in place while the plain password is at hand; only if nobody changed it meanwhile.
    await db.user.updateMany({ where: { id: user.id, passwordHash: user.passwordHash }, data: { passwordHash: await hashPassword(password) } });
  }
  const account = user.accounts[0];
  return account ? { userId: user.id, accountId: account.id, email: user.email } : null;
}

export async function accountOverview(accountId: string) {
  const db = await getDb();
  const [account, lines, chats, keys, webhooks, pending, failed] = await Promise.all([
    db.account.findUniqueOrThrow({ where: { id: accountId }, select: { email: true, name: true } }),
    db.line.count({ where: { accountId } }),
    db.chat.count({ where: { accountId } }),
    db.apiKey.count({ where: { accountId, revokedAt: null } }),
    db.webhook.count({ where: { accountId } }),
    db.outboxItem.count({ where: { accountId, status: { in: ["pending", "held", "claimed"] } } }),
    db.outboxItem.count({ where: { accountId, status: "failed" } }),
  ]);
  return { ...account, counts: { lines, chats, keys, webhooks, pending, failed } };
}

import { z } from "zod";
import { hashPassword } from "../auth/passwords";
import { getDb } from "../db";
import { ApiError } from "../errors";
import type { Account } from "../generated/prisma/client";
import { newId } from "../ids";

export const EmailSchema = z.string().trim().toLowerCase().email("must be an email address").max(320);
export const PasswordSchema = z.string().min(8, "must be at least 8 characters").max(200);

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

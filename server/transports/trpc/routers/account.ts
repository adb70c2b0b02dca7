import { getDb } from "../../../db";
import {
  ApiKeyIdBody,
  CreateApiKeyBody,
  createAccountApiKey,
  listApiKeys,
  replaceAccountApiKey,
  revokeAccountApiKey,
  SetGuardrailsBody,
  setApiKeyGuardrails,
} from "../../../services/accounts/api-keys";
import { SignUpBody, signUp } from "../../../services/accounts/accounts";
import { protectedProcedure, publicProcedure, router } from "../init";

export const accountRouter = router({
  /** Creates a user and their account; the page then signs in through next-auth. */
  signUp: publicProcedure.input(SignUpBody).mutation(async ({ ctx, input }) => {
    const account = await signUp(input, { ip: ctx.clientIp ?? null });
    return { id: account.id, email: account.email };
  }),
  me: protectedProcedure.query(async ({ ctx }) => {
    const db = await getDb();
    const account = await db.account.findUniqueOrThrow({ where: { id: ctx.actor.accountId }, select: { id: true, email: true, name: true } });
    return account;
  }),
});

export const keysRouter = router({
  list: protectedProcedure.query(({ ctx }) => listApiKeys(ctx.actor)),
  create: protectedProcedure.input(CreateApiKeyBody).mutation(({ ctx, input }) => createAccountApiKey(ctx.actor, input)),
  revoke: protectedProcedure.input(ApiKeyIdBody).mutation(({ ctx, input }) => revokeAccountApiKey(ctx.actor, input)),
  replace: protectedProcedure.input(ApiKeyIdBody).mutation(({ ctx, input }) => replaceAccountApiKey(ctx.actor, input)),
  /** Changes a key's guardrails: fields left out keep their value, null clears one. */
  setGuardrails: protectedProcedure.input(SetGuardrailsBody).mutation(({ ctx, input }) => setApiKeyGuardrails(ctx.actor, input)),
});


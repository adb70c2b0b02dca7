import { z } from "zod";
import type { Actor } from "../access/actor";
import { createApiKey, forgetKey } from "../access/api-keys";
import { SCOPES } from "../access/scopes";
import { getDb } from "../../db";
import { ApiError, invalidParam } from "../../kernel/errors";
import type { ApiKey } from "../../generated/prisma/client";
import { serializeApiKey } from "../../wire/serializers";
import { checkApprovalScope } from "../access/approval-scope";
import { guardrailsOf, GuardrailsInput, serializeGuardrails, withGuardrails } from "../../policy/key-guardrails";

export const CreateApiKeyBody = z.object({
  name: z.string().trim().min(1, "must not be empty").max(100),
  scopes: z.array(z.enum(SCOPES)).min(1, "choose at least one scope"),
  line_ids: z.array(z.string().trim().min(1).max(100)).max(100).nullable().optional(),
  expires_at: z.number().int().positive().nullable().optional(),
  guardrails: GuardrailsInput.optional(),
});

export const SetGuardrailsBody = z.object({ id: z.string().trim().min(1).max(100), guardrails: GuardrailsInput });

export const ApiKeyIdBody = z.object({ id: z.string().trim().min(1).max(100) });

const notFound = (id: string) => new ApiError("api_key_not_found", `No API key with ID '${id}'.`, { param: "id" });

async function findKey(actor: Actor, id: string): Promise<ApiKey> {
  const db = await getDb();
  const key = await db.apiKey.findFirst({ where: { id, accountId: actor.accountId } });
  if (!key) throw notFound(id);
  return key;
}

export async function listApiKeys(actor: Actor) {
  const db = await getDb();
  const keys = await db.apiKey.findMany({ where: { accountId: actor.accountId }, orderBy: { id: "desc" } });
  return keys.map((k) => serializeApiKey(k));
}

export async function createAccountApiKey(actor: Actor, input: z.output<typeof CreateApiKeyBody>) {
  const db = await getDb();
  const lineIds = input.line_ids?.length ? [...new Set(input.line_ids)] : null;
  if (lineIds) {
    const owned = await db.line.count({ where: { id: { in: lineIds }, accountId: actor.accountId } });
    if (owned !== lineIds.length) throw invalidParam("line_ids", "Every line must belong to this account.");
  }
  if (input.expires_at != null && input.expires_at <= Date.now()) throw invalidParam("expires_at", "must be in the future");
  const { id, secret } = await createApiKey({
    accountId: actor.accountId,
    name: input.name,
    scopes: [...new Set(input.scopes)],
    lineIds,
    expiresAt: input.expires_at != null ? new Date(input.expires_at) : null,
    guardrails: input.guardrails,
  });
  return { ...serializeApiKey(await db.apiKey.findUniqueOrThrow({ where: { id } })), secret };
}

/** Fields left out keep their value, null clears one; every instance applies them within API_KEY_CACHE_SECONDS. */
export async function setApiKeyGuardrails(actor: Actor, input: z.output<typeof SetGuardrailsBody>) {
  const key = await findKey(actor, input.id);
  const next = withGuardrails(key, input.guardrails);
  checkApprovalScope(key.scopes, guardrailsOf(next));
  const db = await getDb();
  const updated = await db.apiKey.update({ where: { id: key.id }, data: next });
  forgetKey(key.hash);
  return serializeApiKey(updated);
}

export async function revokeAccountApiKey(actor: Actor, input: z.output<typeof ApiKeyIdBody>) {
  const key = await findKey(actor, input.id);
  const db = await getDb();
  const revoked = await db.apiKey.update({ where: { id: key.id }, data: { revokedAt: key.revokedAt ?? new Date() } });
  forgetKey(key.hash);
  return serializeApiKey(revoked);
}

export async function replaceAccountApiKey(actor: Actor, input: z.output<typeof ApiKeyIdBody>) {
  const key = await findKey(actor, input.id);
  const db = await getDb();
  const { id, secret } = await createApiKey({
    accountId: actor.accountId,
    name: key.name,
    scopes: CreateApiKeyBody.shape.scopes.parse(key.scopes),
    lineIds: key.lineRestricted ? key.lineIds : null,
    rateLimitPerHour: key.rateLimitPerHour,
    expiresAt: key.expiresAt && key.expiresAt.getTime() > Date.now() ? key.expiresAt : null,
    guardrails: serializeGuardrails(key),
  });
  await db.apiKey.update({ where: { id: key.id }, data: { revokedAt: key.revokedAt ?? new Date() } });
  forgetKey(key.hash);
  return { ...serializeApiKey(await db.apiKey.findUniqueOrThrow({ where: { id } })), secret, replaces: key.id };
}

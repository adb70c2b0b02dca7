import { createHash, randomBytes } from "node:crypto";
import { config } from "../../kernel/config";
import { getDb } from "../../db";
import { ApiError } from "../../kernel/errors";
import { newId } from "../../kernel/ids";
import { processSingleton } from "../../kernel/singleton";
import type { Actor } from "./actor";
import { isScope, type Scope } from "./scopes";
import { APPROVE_SCOPE, checkApprovalScope } from "./approval-scope";
import { guardrailsOf, type GuardrailsInput, UNGUARDED, withGuardrails } from "../../policy/key-guardrails";
import { log } from "../../kernel/log";

// API keys: sk_live_ + 32 random characters, shown once, stored as a SHA-256 hash. Verified
// keys are cached for API_KEY_CACHE_SECONDS so the hot path costs no database round trip;
// a revocation is honoured by every instance within that time (at once in this process).

const KEY_PREFIX = "sk_live_";
const KEY_FORMAT = /^sk_live_[A-Za-z0-9_-]{20,200}$/;
const LAST_USED_EVERY_MS = 60_000;

export function hashKey(secret: string): string {
  return createHash("sha256").update(secret).digest("hex");
}

function generateKeySecret(): string {
  return KEY_PREFIX + randomBytes(24).toString("base64url");
}

function visiblePrefix(secret: string): string {
  return `${secret.slice(0, KEY_PREFIX.length + 4)}…${secret.slice(-4)}`;
}

export interface CreateKeyInput {
  accountId: string;
  name: string;
  scopes: Scope[];
  lineIds?: string[] | null;
  rateLimitPerHour?: number | null;
  expiresAt?: Date | null;
  guardrails?: GuardrailsInput;
}

export async function createApiKey(input: CreateKeyInput): Promise<{ id: string; secret: string }> {
  const db = await getDb();
  const secret = generateKeySecret();
  const id = newId("apiKey");
  const guardrails = withGuardrails(UNGUARDED, input.guardrails ?? {});
  checkApprovalScope(input.scopes, guardrailsOf(guardrails));
  await db.apiKey.create({
    data: {
      id,
      accountId: input.accountId,
      name: input.name,
      hash: hashKey(secret),
      prefix: visiblePrefix(secret),
      scopes: input.scopes,
      lineRestricted: input.lineIds != null,
      lineIds: input.lineIds ?? [],
      rateLimitPerHour: input.rateLimitPerHour ?? null,
      expiresAt: input.expiresAt ?? null,
      ...guardrails,
    },
  });
  return { id, secret };
}

export async function revokeApiKeyBySecret(secret: string): Promise<boolean> {
  const db = await getDb();
  const hash = hashKey(secret);
  const { count } = await db.apiKey.updateMany({ where: { hash, revokedAt: null }, data: { revokedAt: new Date() } });
  cache.delete(hash);
  if (count) return true;
  return (await db.apiKey.count({ where: { hash } })) > 0;
}

interface CachedKey {
  actor: Actor;
  expiresAt: number | null;
  revoked: boolean;
  cachedAt: number;
}

const cache = processSingleton("api-key-cache", () => new Map<string, CachedKey>());
const lastUsedWritten = processSingleton("api-key-last-used", () => new Map<string, number>());

export function forgetKey(hash: string): void {
  cache.delete(hash);
}

async function loadKey(hash: string): Promise<CachedKey | null> {
  const db = await getDb();
  const key = await db.apiKey.findUnique({
    where: { hash },
    select: {
      id: true,
      accountId: true,
      scopes: true,
      lineRestricted: true,
      lineIds: true,
      rateLimitPerHour: true,
      expiresAt: true,
      revokedAt: true,
      allowTo: true,
      requireApproval: true,
      maxSendsPerChatWithoutReply: true,
      maxSendsPerDay: true,
      account: { select: { ownerId: true } },
    },
  });
  if (!key) return null;
  const guardrails = guardrailsOf(key);
  return {
    actor: {
      accountId: key.accountId,
      keyId: key.id,
      // A key with guardrails never approves, whatever its stored scopes say.
      scopes: new Set(key.scopes.filter(isScope).filter((s) => !(guardrails && s === APPROVE_SCOPE))),
      lineIds: key.lineRestricted ? new Set(key.lineIds) : null,
      rateLimitPerHour: key.rateLimitPerHour ?? config().RATE_LIMIT_PER_HOUR,
      hasOwner: key.account.ownerId !== null,
      guardrails,
    },
    expiresAt: key.expiresAt?.getTime() ?? null,
    revoked: key.revokedAt !== null,
    cachedAt: Date.now(),
  };
}

const loading = processSingleton("api-key-loading", () => new Map<string, Promise<CachedKey | null>>());

/** One database read per key at a time: when its cache entry expires under load, every request waiting on it shares the read. */
function loadKeyOnce(hash: string): Promise<CachedKey | null> {
  let pending = loading.get(hash);
  if (!pending) {
    pending = loadKey(hash).finally(() => loading.delete(hash));
    loading.set(hash, pending);
  }
  return pending;
}

function touchLastUsed(keyId: string, now: number): void {
  const last = lastUsedWritten.get(keyId) ?? 0;
  if (now - last < LAST_USED_EVERY_MS) return;
  lastUsedWritten.set(keyId, now);
  void getDb()
    .then((db) => db.apiKey.update({ where: { id: keyId }, data: { lastUsedAt: new Date(now) } }))
    .catch((err: unknown) => log().error({ err }, "could not record last_used_at"));
}

export async function authenticate(authorization: string | null): Promise<Actor> {
  if (authorization === null || authorization.trim() === "") {
    throw new ApiError(
      "missing_api_key",
      "No API key provided. Send it as 'Authorization: Bearer sk_live_...'.",
    );
  }
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  const secret = match?.[1];
  if (!secret || !KEY_FORMAT.test(secret)) {
    throw new ApiError("invalid_api_key", "Malformed API key. Expected 'Authorization: Bearer sk_live_...'.");
  }
  const hash = hashKey(secret);
  const now = Date.now();
  let entry = cache.get(hash);
  if (!entry || now - entry.cachedAt > config().API_KEY_CACHE_SECONDS * 1000) {
    const loaded = await loadKeyOnce(hash);
    if (!loaded) {
      cache.delete(hash);
      throw new ApiError("invalid_api_key", "Invalid API key.");
    }
    entry = loaded;
    cache.set(hash, entry);
  }
  if (entry.revoked) throw new ApiError("invalid_api_key", "This API key has been revoked.");
  if (entry.expiresAt !== null && entry.expiresAt <= now) throw new ApiError("invalid_api_key", "This API key has expired.");
  touchLastUsed(entry.actor.keyId!, now);
  return entry.actor;
}

export function requireScope(actor: Actor, scope: Scope): void {
  if (!actor.scopes.has(scope)) {
    throw new ApiError("insufficient_scope", `This API key lacks the '${scope}' scope required for this request.`);
  }
}

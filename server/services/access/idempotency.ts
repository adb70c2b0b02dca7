import { createHash, timingSafeEqual } from "node:crypto";
import type { Actor } from "./actor";
import { getDb } from "../../db";
import { ApiError, invalidParam } from "../../kernel/errors";
import { newId } from "../../kernel/ids";

// Stripe's semantics (docs/api.md, "Conventions"), per API key. A secret in a response is never stored: the record
// keeps its SHA-256, and a replay re-reads it, showing it only while unchanged.

export const IDEMPOTENCY_TTL_MS = 24 * 3_600_000;
const WAIT_FOR_FIRST_MS = 10_000;
/** Printable ASCII without spaces, as the OpenAPI document states it (its `pattern`). */
export const IDEMPOTENCY_KEY_PATTERN = "^[!-~]{1,255}$";
const KEY_FORMAT = new RegExp(IDEMPOTENCY_KEY_PATTERN);

export interface StoredResponse {
  status: number;
  body: object;
}

export function requestHash(method: string, path: string, payload: string | Uint8Array): string {
  return createHash("sha256").update(`${method} ${path}\n`).update(payload).digest("hex");
}

/** Canonical JSON (sorted keys), so a re-serialized retry of the same body matches. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

export function parseIdempotencyKey(header: string | null): string | null {
  if (header === null) return null;
  if (!KEY_FORMAT.test(header)) {
    throw invalidParam("Idempotency-Key", "Idempotency-Key must be 1 to 255 printable ASCII characters without spaces.");
  }
  return header;
}

export type CurrentSecret = (actor: Actor, body: object) => Promise<string | null>;

const digest = (secret: string) => createHash("sha256").update(secret).digest("hex");

type Outcome = { replay: StoredResponse; secretDigest: string | null } | { run: true; recordId: string };

/** Records belong to an API key; a dashboard session (no key) has none of its own. */
const ownerOf = (actor: Actor) => actor.keyId ?? `account:${actor.accountId}`;

async function claim(actor: Actor, key: string, hash: string, method: string, path: string): Promise<Outcome> {
  const db = await getDb();
  const owner = ownerOf(actor);
  const deadline = Date.now() + WAIT_FOR_FIRST_MS;
  for (;;) {
    const now = new Date();
    await db.idempotencyRecord.deleteMany({ where: { apiKeyId: owner, key, expiresAt: { lt: now } } });
    const id = newId("idempotency");
    const inserted = await db.$executeRaw`
      INSERT INTO "IdempotencyRecord" (id, "accountId", "apiKeyId", key, "requestHash", method, path, "createdAt", "expiresAt")
      VALUES (${id}, ${actor.accountId}, ${owner}, ${key}, ${hash}, ${method}, ${path}, ${now}, ${new Date(now.getTime() + IDEMPOTENCY_TTL_MS)})
      ON CONFLICT ("apiKeyId", key) DO NOTHING`;
    if (inserted === 1) return { run: true, recordId: id };
    const existing = await db.idempotencyRecord.findUnique({ where: { apiKeyId_key: { apiKeyId: owner, key } } });
    if (!existing) continue; // expired and removed meanwhile: try again
    if (existing.requestHash !== hash) {
      throw new ApiError(
        "idempotency_key_reused",
        `Idempotency-Key '${key}' was already used with a different request (${existing.method} ${existing.path}). Use a new key for a new request.`,
        { param: "Idempotency-Key" },
      );
    }
    if (existing.responseStatus !== null && existing.responseBody !== null) {
      return { replay: { status: existing.responseStatus, body: existing.responseBody as object }, secretDigest: existing.secretDigest };
    }
    if (Date.now() > deadline) {
      throw new ApiError("idempotency_key_in_use", `A request with Idempotency-Key '${key}' is still being processed. Retry shortly.`, {
        param: "Idempotency-Key",
      });
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function withSecret(actor: Actor, body: object, secretDigest: string | null, currentSecret?: CurrentSecret): Promise<object> {
  if (!secretDigest || !currentSecret) return body;
  const secret = await currentSecret(actor, body);
  if (secret === null || !timingSafeEqual(Buffer.from(digest(secret)), Buffer.from(secretDigest))) return body;
  return { ...body, secret };
}

/** Failures of 500 and above are not kept, so a retry may run again. */
export async function idempotent(
  actor: Actor,
  key: string,
  hash: string,
  method: string,
  path: string,
  execute: () => Promise<StoredResponse>,
  currentSecret?: CurrentSecret,
): Promise<StoredResponse & { replayed: boolean }> {
  const outcome = await claim(actor, key, hash, method, path);
  if ("replay" in outcome) {
    const body = await withSecret(actor, outcome.replay.body, outcome.secretDigest, currentSecret);
    return { status: outcome.replay.status, body, replayed: true };
  }
  const db = await getDb();
  let result: StoredResponse;
  try {
    result = await execute();
  } catch (err) {
    if (err instanceof ApiError && err.status < 500) {
      const body = { error: { type: err.type, code: err.code, message: err.message, ...(err.param ? { param: err.param } : {}) } };
      await db.idempotencyRecord.update({ where: { id: outcome.recordId }, data: { responseStatus: err.status, responseBody: body } });
    } else {
      await db.idempotencyRecord.delete({ where: { id: outcome.recordId } }).catch(() => undefined);
    }
    throw err;
  }
  const { secret, ...rest } = result.body as { secret?: unknown };
  const kept = typeof secret === "string" ? { body: rest, secretDigest: digest(secret) } : { body: result.body, secretDigest: null };
  await db.idempotencyRecord.update({
    where: { id: outcome.recordId },
    data: { responseStatus: result.status, responseBody: kept.body, secretDigest: kept.secretDigest },
  });
  return { ...result, replayed: false };
}

export async function deleteExpiredIdempotencyRecords(now = new Date()): Promise<number> {
  const db = await getDb();
  const { count } = await db.idempotencyRecord.deleteMany({ where: { expiresAt: { lt: now } } });
  return count;
}

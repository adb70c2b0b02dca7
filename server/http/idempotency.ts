import { createHash } from "node:crypto";
import type { Actor } from "../auth/actor";
import { getDb } from "../db";
import { ApiError, invalidParam } from "../errors";
import { newId } from "../ids";

// Idempotency-Key on POST, with Stripe's semantics: the first request with a key runs and its
// response (any status below 500) is kept for 24 hours; a retry with the same key and the same
// request gets that response again without running anything; the same key with a different
// request is a 400; a retry while the first is still running waits for it. Keys are per account.

export const IDEMPOTENCY_TTL_MS = 24 * 3_600_000;
const WAIT_FOR_FIRST_MS = 10_000;
const KEY_FORMAT = /^[\x21-\x7e]{1,255}$/;

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

type Outcome = { replay: StoredResponse } | { run: true; recordId: string };

async function claim(actor: Actor, key: string, hash: string, method: string, path: string): Promise<Outcome> {
  const db = await getDb();
  const deadline = Date.now() + WAIT_FOR_FIRST_MS;
  for (;;) {
    const now = new Date();
    await db.idempotencyRecord.deleteMany({ where: { accountId: actor.accountId, key, expiresAt: { lt: now } } });
    const id = newId("idempotency");
    const inserted = await db.$executeRaw`
      INSERT INTO "IdempotencyRecord" (id, "accountId", key, "requestHash", method, path, "createdAt", "expiresAt")
      VALUES (${id}, ${actor.accountId}, ${key}, ${hash}, ${method}, ${path}, ${now}, ${new Date(now.getTime() + IDEMPOTENCY_TTL_MS)})
      ON CONFLICT ("accountId", key) DO NOTHING`;
    if (inserted === 1) return { run: true, recordId: id };
    const existing = await db.idempotencyRecord.findUnique({ where: { accountId_key: { accountId: actor.accountId, key } } });
    if (!existing) continue; // expired and removed meanwhile: try again
    if (existing.requestHash !== hash) {
      throw new ApiError(
        "idempotency_key_reused",
        `Idempotency-Key '${key}' was already used with a different request (${existing.method} ${existing.path}). Use a new key for a new request.`,
        { param: "Idempotency-Key" },
      );
    }
    if (existing.responseStatus !== null && existing.responseBody !== null) {
      return { replay: { status: existing.responseStatus, body: existing.responseBody as object } };
    }
    if (Date.now() > deadline) {
      throw new ApiError("idempotency_key_in_use", `A request with Idempotency-Key '${key}' is still being processed. Retry shortly.`, {
        param: "Idempotency-Key",
      });
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Runs `execute` at most once per (account, key) within 24 h. Returns the response to send and
 * whether it was replayed. Failures of 500 and above are not kept, so a retry may run again.
 */
export async function idempotent(
  actor: Actor,
  key: string,
  hash: string,
  method: string,
  path: string,
  execute: () => Promise<StoredResponse>,
): Promise<StoredResponse & { replayed: boolean }> {
  const outcome = await claim(actor, key, hash, method, path);
  if ("replay" in outcome) return { ...outcome.replay, replayed: true };
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
  await db.idempotencyRecord.update({
    where: { id: outcome.recordId },
    data: { responseStatus: result.status, responseBody: result.body as object },
  });
  return { ...result, replayed: false };
}

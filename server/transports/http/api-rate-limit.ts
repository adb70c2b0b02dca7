import type { Actor } from "../../services/access/actor";
import { ApiError } from "../../kernel/errors";
import { consume } from "../../services/access/quota-lease";

const HOUR = 3_600_000;

/** Counts the request against the key's hourly quota; returns the X-RateLimit-* headers. */
export async function enforceRateLimit(actor: Actor, now = Date.now()): Promise<Record<string, string>> {
  const state = await consume(`key:${actor.keyId ?? actor.accountId}`, actor.rateLimitPerHour, HOUR, now);
  const headers = {
    "X-RateLimit-Limit": String(state.limit),
    "X-RateLimit-Remaining": String(state.remaining),
    "X-RateLimit-Reset": String(Math.ceil(state.resetAt / 1000)),
  };
  if (!state.allowed) {
    const retryAfter = Math.max(1, Math.ceil((state.resetAt - now) / 1000));
    throw new ApiError(
      "rate_limit_exceeded",
      `Hourly rate limit of ${state.limit} requests exceeded for this API key. Retry after ${retryAfter} seconds.`,
      { headers: { ...headers, "Retry-After": String(retryAfter) } },
    );
  }
  return headers;
}

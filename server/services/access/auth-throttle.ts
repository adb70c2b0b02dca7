import { createHash } from "node:crypto";
import { ApiError } from "../../kernel/errors";
import { slidingHit as hit, type WindowState } from "./rate-limit";

// Every attempt counts, successful or not, so the limit also bounds the password hashing (about 0.4 s of a core each) a
// client can cause. Sliding windows, shared by every instance. Clients of unknown address (clientIp() null) share one
// larger budget, which still bounds the hashing for the whole instance.

const WINDOW_MS = 15 * 60_000;

const AUTH_LIMITS = {
  sign_in: { perIp: 30, perUnknownIp: 300, perEmail: 10 },
  sign_up: { perIp: 10, perUnknownIp: 100, perEmail: 5 },
} as const;

export type AuthAttempt = keyof typeof AUTH_LIMITS;

/** Emails are not kept in the counters table, only a digest of the normalised address. */
const emailBucket = (email: string) => createHash("sha256").update(email.trim().toLowerCase()).digest("base64url").slice(0, 22);

export async function throttleAuthAttempt(kind: AuthAttempt, who: { ip: string | null; email?: string | null }, now = Date.now()): Promise<void> {
  const limits = AUTH_LIMITS[kind];
  const windows: Promise<WindowState>[] = [
    who.ip ? hit(`auth:${kind}:ip:${who.ip}`, limits.perIp, WINDOW_MS, 1, now) : hit(`auth:${kind}:ip:unknown`, limits.perUnknownIp, WINDOW_MS, 1, now),
  ];
  if (who.email?.trim()) {
    // Sign-in: per email *from this address*, so nobody can lock an account's owner out by
    // spending its budget from elsewhere (each address still has its own limit).
    const from = kind === "sign_in" ? `:${who.ip ?? "unknown"}` : "";
    windows.push(hit(`auth:${kind}:email:${emailBucket(who.email)}${from}`, limits.perEmail, WINDOW_MS, 1, now));
  }
  const refused = (await Promise.all(windows)).filter((w) => !w.allowed);
  if (!refused.length) return;
  const retryAfter = Math.max(1, Math.ceil((Math.max(...refused.map((w) => w.resetAt)) - now) / 1000));
  const what = kind === "sign_in" ? "sign-in" : "sign-up";
  throw new ApiError("rate_limit_exceeded", `Too many ${what} attempts. Retry after ${retryAfter} seconds.`, {
    headers: { "Retry-After": String(retryAfter) },
  });
}

import { createHash } from "node:crypto";
import { ApiError } from "../../kernel/errors";
import { slidingHit as hit, type WindowState } from "./rate-limit";

// Sign-in and sign-up attempts per client address and per email, in the shared database
// windows (every app instance counts together; sliding, so a burst across a window boundary
// gets no second budget). Every attempt counts, successful or not, so
// the limit also bounds the password hashing (about 0.4 s of a core each) a client can cause.
// Addresses come from clientIp() (the connection's, or X-Forwarded-For's under
// TRUST_PROXY_HOPS): null means unknown, and all such clients share one larger budget, which
// still bounds the hashing done for the whole instance. The sign-in email limit counts per
// email and address.

const WINDOW_MS = 15 * 60_000;

const AUTH_LIMITS = {
  sign_in: { perIp: 30, perUnknownIp: 300, perEmail: 10 },
  sign_up: { perIp: 10, perUnknownIp: 100, perEmail: 5 },
} as const;

export type AuthAttempt = keyof typeof AUTH_LIMITS;

/** Emails are not kept in the counters table, only a digest of the normalised address. */
const emailBucket = (email: string) => createHash("sha256").update(email.trim().toLowerCase()).digest("base64url").slice(0, 22);

/** Counts one attempt; throws 429 rate_limit_exceeded (with Retry-After) once a window is used up. */
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

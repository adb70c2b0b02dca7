// Retry-After, as every outbound call of ours reads it (provider clients, the webhook sender).

/** Retry-After as ms: delta-seconds or an HTTP date (past dates are 0); null when absent or unreadable. */
export function parseRetryAfter(value: string | null | undefined, now = Date.now()): number | null {
  const trimmed = value?.trim();
  if (!trimmed) return null;
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isFinite(at) ? Math.max(0, at - now) : null;
}

export const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });

/** Retry-After in ms: delay-seconds or an HTTP date. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** baseUrl + path + query string (undefined and null values left out). */
export function buildUrl(baseUrl: string, path: string, query?: Record<string, unknown>): string {
  // Trailing slashes trimmed by a loop: /\/+$/ backtracks quadratically on a long run of them.
  let end = baseUrl.length;
  while (end > 0 && baseUrl[end - 1] === "/") end--;
  const url = new URL(baseUrl.slice(0, end) + path);
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value === undefined || value === null) continue;
    url.searchParams.append(name, String(value));
  }
  return url.toString();
}

// Only a path on this site: browsers read `//host`, `/\host` and tab-prefixed variants as another
// origin, and `/.//host` normalises to `//host`, which a later redirect reads as one again.

const DEFAULT_CALLBACK = "/dashboard";

export function safeCallbackPath(value: string | null | undefined, origin: string, fallback = DEFAULT_CALLBACK): string {
  if (!value) return fallback;
  let url: URL;
  try {
    url = new URL(value, origin);
  } catch {
    return fallback;
  }
  if (url.origin !== new URL(origin).origin || url.pathname.startsWith("//")) return fallback;
  return `${url.pathname}${url.search}${url.hash}`;
}

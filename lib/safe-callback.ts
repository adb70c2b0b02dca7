// Where to go after signing in: only a path on this site. Browsers resolve `//host`, `/\host`
// and tab-prefixed variants to another origin, and `/.//host` normalises to the path `//host`,
// which a later redirect reads as another origin again: all fall back.

const DEFAULT_CALLBACK = "/dashboard";

/** The same-origin path (with query and fragment) that `value` names, or `fallback`. */
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

// Text PostgreSQL (and embedded PGlite, the same engine) can store: `text` and `jsonb` refuse
// the NUL character, and UTF-8 cannot carry a lone UTF-16 surrogate. What arrives from outside
// and is not the caller's to fix (a provider's message, a receiver's reply) is stored with
// each of them replaced by U+FFFD (the replacement character), the same on both databases, so
// one such message is kept, readably, instead of failing its whole batch. API input is refused
// instead (rejectUnsafeStrings): its sender can fix it.

// eslint-disable-next-line no-control-regex -- NUL is exactly what must go
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** `value` with NUL characters and lone surrogates replaced by U+FFFD. */
export function storableText(value: string): string;
export function storableText(value: string | null): string | null;
export function storableText(value: string | null): string | null {
  if (value === null) return null;
  return value.replace(UNSTORABLE, "\uFFFD");
}

/** A copy of `value` with storableText applied to every string in it (plain objects and arrays; other values as they are). */
export function storableDeep<T>(value: T): T {
  if (typeof value === "string") return storableText(value) as T;
  if (Array.isArray(value)) return value.map(storableDeep) as T;
  if (value !== null && typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, storableDeep(v)])) as T;
  }
  return value;
}

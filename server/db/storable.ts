// `text` and `jsonb` refuse NUL and UTF-8 cannot carry a lone surrogate: what arrives from outside
// (a provider's message) gets U+FFFD instead of failing its batch; API input is refused instead.

// eslint-disable-next-line no-control-regex -- NUL is exactly what must go
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

export function storableText(value: string): string;
export function storableText(value: string | null): string | null;
export function storableText(value: string | null): string | null {
  if (value === null) return null;
  return value.replace(UNSTORABLE, "\uFFFD");
}

export function storableDeep<T>(value: T): T {
  if (typeof value === "string") return storableText(value) as T;
  if (Array.isArray(value)) return value.map(storableDeep) as T;
  if (value !== null && typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, storableDeep(v)])) as T;
  }
  return value;
}

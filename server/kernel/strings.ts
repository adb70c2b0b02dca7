/** One pass: a regex such as /\/+$/ is quadratic on many slashes. */
export function trimTrailingSlashes(s: string, keep = 0): string {
  let end = s.length;
  while (end > keep && s.charCodeAt(end - 1) === 0x2f) end--;
  return end === s.length ? s : s.slice(0, end);
}

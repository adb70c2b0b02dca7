import type { z } from "zod";
import { invalidParam, missingParam } from "../kernel/errors";

// A zod parse whose failure is the /v1 error of the first issue: every transport and a batch's items answer alike.

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let cur: unknown = input;
  for (const key of path) {
    if (cur === null || typeof cur !== "object") return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[key];
  }
  return cur;
}

// A lone surrogate (JSON "\ud800") is not UTF-8: the database driver fails on it. Without the u
// flag the regexp sees code units, and each alternative looks one unit around: a linear scan.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Iterative, so no input nests deep enough to overflow the stack. */
export function rejectUnsafeStrings(input: unknown, root = ""): void {
  const stack: [unknown, string][] = [[input, root]];
  while (stack.length) {
    const [value, path] = stack.pop()!;
    if (typeof value === "string") {
      const problem = value.includes("\u0000") ? "NUL characters" : LONE_SURROGATE.test(value) ? "unpaired UTF-16 surrogates" : null;
      if (problem) throw invalidParam(path || "body", `Invalid value for '${path || "body"}': must not contain ${problem}.`);
    } else if (value !== null && typeof value === "object") {
      // Pushed in reverse, so the first offending field in document order is reported.
      const entries = Object.entries(value);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [k, v] = entries[i]!;
        stack.push([v, path ? `${path}.${k}` : k]);
      }
    }
  }
}

/** `checkStrings: false` where the parsed value's parts are parsed again on their own (a batch's messages). */
export function parseWith<S extends z.ZodType>(schema: S, input: unknown, options: { checkStrings?: boolean } = {}): z.output<S> {
  if (options.checkStrings !== false) rejectUnsafeStrings(input);
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const param = issue.path.map(String).join(".") || "body";
  if (issue.path.length > 0 && valueAt(input, issue.path) === undefined && issue.code === "invalid_type") {
    throw missingParam(param);
  }
  throw invalidParam(param, `Invalid value for '${param}': ${issue.message}`);
}

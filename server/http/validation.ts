import type { z } from "zod";
import { ApiError, invalidParam, missingParam } from "../errors";

// Turns zod failures into the SPEC.md codes: a field that is absent is
// missing_required_parameter, any other failure invalid_parameter_value; `param` names it.

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let cur: unknown = input;
  for (const key of path) {
    if (cur === null || typeof cur !== "object") return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[key];
  }
  return cur;
}

/** PostgreSQL text cannot hold NUL: refuse it up front, naming the field. */
function rejectNul(value: unknown, path: string): void {
  if (typeof value === "string") {
    if (value.includes("\u0000")) throw invalidParam(path || "body", `Invalid value for '${path}': must not contain NUL characters.`);
  } else if (Array.isArray(value)) {
    value.forEach((v, i) => rejectNul(v, path ? `${path}.${i}` : String(i)));
  } else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) rejectNul(v, path ? `${path}.${k}` : k);
  }
}

export function parseWith<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  rejectNul(input, "");
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const param = issue.path.map(String).join(".") || "body";
  if (issue.path.length > 0 && valueAt(input, issue.path) === undefined && issue.code === "invalid_type") {
    throw missingParam(param);
  }
  throw invalidParam(param, `Invalid value for '${param}': ${issue.message}`);
}

/** Query string to a plain object: first value of each name, empty values dropped. */
export function queryObject(url: URL): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of url.searchParams) {
    if (v !== "" && !(k in out)) out[k] = v;
  }
  return out;
}

/** Reads a JSON object body; an empty body is {} (then missing fields are reported). */
export async function jsonBody(request: Request): Promise<Record<string, unknown>> {
  const text = await request.text();
  if (text.trim() === "") return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ApiError("invalid_json", "The request body is not valid JSON.");
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new ApiError("invalid_json", "The request body must be a JSON object.");
  }
  return parsed as Record<string, unknown>;
}

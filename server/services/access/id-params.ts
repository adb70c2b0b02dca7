import { invalidParam } from "../../kernel/errors";
import { ID_PREFIXES, type IdKind, hasPrefix } from "../../kernel/ids";

// How a parameter that names a resource is checked before the lookup (SPEC.md "Errors"): a
// value of the right kind that names nothing is the resource's *_not_found (404), whether or
// not it looks like an ID this server minted; only a value that is not an ID of that kind at
// all is invalid_parameter_value (400).

const ANY_PREFIX = new RegExp(`^(${Object.values(ID_PREFIXES).join("|")})_`);

/** For parameters that take only IDs of one kind (file_, obx_, wh_, dlv_). */
export function requireIdKind(kind: IdKind, value: string, param: string): void {
  if (!hasPrefix(kind, value)) throw invalidParam(param, `'${value}' is not a ${ID_PREFIXES[kind]}_ ID.`);
}

/**
 * For parameters that take an ID of one kind or something else (a GUID, a phone number): a
 * value carrying another resource's ID prefix is rejected; anything else is looked up.
 */
export function rejectForeignId(value: string, allowed: IdKind | null, param: string): void {
  const m = ANY_PREFIX.exec(value);
  if (!m || (allowed && m[1] === ID_PREFIXES[allowed])) return;
  throw invalidParam(param, `'${value}' has the wrong ID prefix for '${param}'.`);
}

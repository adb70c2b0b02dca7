import { invalidParam } from "../../kernel/errors";
import { ID_PREFIXES, type IdKind, hasPrefix } from "../../kernel/ids";

// A value of the right kind that names nothing is the resource's *_not_found (404), whether or not this server minted
// it; only a value not of that kind at all is invalid_parameter_value (400).

const ANY_PREFIX = new RegExp(`^(${Object.values(ID_PREFIXES).join("|")})_`);

export function requireIdKind(kind: IdKind, value: string, param: string): void {
  if (!hasPrefix(kind, value)) throw invalidParam(param, `'${value}' is not a ${ID_PREFIXES[kind]}_ ID.`);
}

/** A value carrying another resource's ID prefix is rejected; anything else (a GUID, a phone number) is looked up. */
export function rejectForeignId(value: string, allowed: IdKind | null, param: string): void {
  const m = ANY_PREFIX.exec(value);
  if (!m || (allowed && m[1] === ID_PREFIXES[allowed])) return;
  throw invalidParam(param, `'${value}' has the wrong ID prefix for '${param}'.`);
}

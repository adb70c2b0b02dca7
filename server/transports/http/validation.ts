import { ApiError } from "../../kernel/errors";
import { jsonBodyLimit, readText } from "./body";

/** The first value of each name; empty values dropped. */
export function queryObject(url: URL): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of url.searchParams) {
    if (v !== "" && !(k in out)) out[k] = v;
  }
  return out;
}

export const MAX_JSON_DEPTH = 64;

/** One linear pass, so a hostile body is refused before anything recursive (parsers, validators) meets it. */
export function jsonTooDeep(text: string, max = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

export function parseJson(text: string, what = "The request body"): unknown {
  if (jsonTooDeep(text)) throw new ApiError("invalid_json", `${what} nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels.`);
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError("invalid_json", `${what} is not valid JSON.`);
  }
}

function isJsonType(contentType: string | null): boolean {
  if (!contentType) return false;
  const semi = contentType.indexOf(";");
  const type = (semi === -1 ? contentType : contentType.slice(0, semi)).trim().toLowerCase();
  return type === "application/json" || (type.startsWith("application/") && type.endsWith("+json"));
}

function notJson(request: Request): ApiError {
  const type = request.headers.get("content-type");
  return new ApiError("unsupported_media_type", `Request bodies are JSON: send Content-Type: application/json${type ? `, not ${type.slice(0, 100)}` : ""}.`);
}

/** An empty body is {} (so missing fields are reported); one not sent as JSON is 415, unread when it can be. */
export async function jsonBody(request: Request): Promise<Record<string, unknown>> {
  const json = isJsonType(request.headers.get("content-type"));
  if (!json && Number(request.headers.get("content-length") ?? 0) > 0) throw notJson(request);
  const text = await readText(request, jsonBodyLimit());
  if (text.trim() === "") return {};
  if (!json) throw notJson(request);
  const parsed = parseJson(text);
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new ApiError("invalid_json", "The request body must be a JSON object.");
  }
  return parsed as Record<string, unknown>;
}

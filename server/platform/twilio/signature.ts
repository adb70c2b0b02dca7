import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { parse as parseQuery, stringify as stringifyQuery } from "node:querystring";

// X-Twilio-Signature, computed exactly as Twilio computes it (twilio-node
// src/webhooks/webhooks.ts, 45d3d65; https://www.twilio.com/docs/usage/webhooks/webhooks-security):
// base64(HMAC-SHA1(key = auth token, message = the full URL Twilio called + every POST parameter
// sorted by name, each name followed by its value)). A name posted more than once contributes
// each of its distinct values, sorted. Twilio's own URL may or may not carry the default port
// and its query may be escaped differently, so the validator accepts each of those spellings,
// as the official libraries do.

/** Form parameters by name, every value of a repeated name kept. */
export type SignedParams = ReadonlyMap<string, readonly string[]>;

/** The parameters of an application/x-www-form-urlencoded body. */
export function formParams(body: string | URLSearchParams): Map<string, string[]> {
  const params = new Map<string, string[]>();
  for (const [name, value] of typeof body === "string" ? new URLSearchParams(body) : body) {
    const list = params.get(name);
    if (list) list.push(value);
    else params.set(name, [value]);
  }
  return params;
}

/** The string Twilio signs: the URL, then name + value for each parameter by name. */
export function signedString(url: string, params: SignedParams): string {
  let data = url;
  for (const name of [...params.keys()].sort()) {
    for (const value of [...new Set(params.get(name))].sort()) data += name + value;
  }
  return data;
}

export function twilioSignature(authToken: string, url: string, params: SignedParams = new Map()): string {
  return createHmac("sha1", authToken).update(Buffer.from(signedString(url, params), "utf8")).digest("base64");
}

/** The URL with the scheme's default port spelled out (https://h/… → https://h:443/…); unchanged when it has a port. */
function withPort(url: URL): string {
  if (url.port) return url.toString();
  const auth = url.username || url.password ? `${url.username}${url.password ? `:${url.password}` : ""}@` : "";
  return `${url.protocol}//${auth}${url.host}${url.protocol === "https:" ? ":443" : ":80"}${url.pathname}${url.search}${url.hash}`;
}

function withoutPort(url: URL): string {
  const copy = new URL(url);
  copy.port = "";
  return copy.toString();
}

/** The query re-encoded as Node's legacy querystring does (Twilio signs some characters unescaped, e.g. '). */
function withLegacyQuery(url: string): string {
  const parsed = new URL(url);
  if (!parsed.search) return url;
  const query = stringifyQuery(parseQuery(parsed.search.slice(1)));
  parsed.search = "";
  return `${parsed.toString()}?${query}`;
}

/** Every spelling of `url` Twilio may have signed. */
export function signatureUrls(url: string): string[] {
  const parsed = new URL(url);
  const bare = [url, withoutPort(parsed), withPort(parsed)];
  return [...new Set([...bare, ...bare.map(withLegacyQuery)])];
}

function sameSignature(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Whether `signature` is Twilio's signature of this request under `authToken` (constant-time compares). */
export function validTwilioSignature(authToken: string, signature: string, url: string, params: SignedParams = new Map()): boolean {
  if (!authToken || !signature) return false;
  let valid = false;
  for (const candidate of signatureUrls(url)) valid = sameSignature(signature, twilioSignature(authToken, candidate, params)) || valid;
  return valid;
}

/** The hex SHA-256 of a raw body: Twilio puts it in the URL as bodySHA256 when it posts JSON. */
export function bodySha256(body: string | Uint8Array): string {
  return createHash("sha256").update(body).digest("hex");
}

/** A JSON webhook: the signature covers the URL alone, whose bodySHA256 must be the body's hash. */
export function validTwilioJsonSignature(authToken: string, signature: string, url: string, body: string | Uint8Array): boolean {
  const hash = new URL(url).searchParams.get("bodySHA256") ?? "";
  return validTwilioSignature(authToken, signature, url) && sameSignature(hash, bodySha256(body));
}

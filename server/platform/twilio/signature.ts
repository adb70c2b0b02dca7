import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { parse as parseQuery, stringify as stringifyQuery } from "node:querystring";

// As Twilio computes it (twilio-node src/webhooks/webhooks.ts, 45d3d65): base64 HMAC-SHA1 keyed with the auth token, of
// the URL + each parameter sorted by name (name, then value; a repeated name: each distinct value, sorted). Twilio's URL
// may or may not carry the default port and its query may be escaped differently: each spelling is accepted, as the official libraries do.

export type SignedParams = ReadonlyMap<string, readonly string[]>;

export function formParams(body: string | URLSearchParams): Map<string, string[]> {
  const params = new Map<string, string[]>();
  for (const [name, value] of typeof body === "string" ? new URLSearchParams(body) : body) {
    const list = params.get(name);
    if (list) list.push(value);
    else params.set(name, [value]);
  }
  return params;
}

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

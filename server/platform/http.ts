// What the provider clients share over ../http-out: the guarded transport (PROVIDER_ALLOW_PRIVATE lifts
// the guard), failure kinds, media types, secret scrubbing. What a failure means for a send is each platform's call.

import dns from "node:dns";
import net from "node:net";
import { config } from "../kernel/config";
import { type AnswerHeaders, exchange as send, type Exchange, type ExchangeInit, type FetchLike, fetchTransport, truncate } from "../http-out/exchange";
import { guardedTransport } from "../http-out/guarded";
import { checkProviderUrl, FORBIDDEN_DESTINATION, ForbiddenAddressError, guardedLookup, isForbiddenAddress, isOwnAddress, unbracketed } from "../http-out/url-guard";

export {
  type AnswerHeaders,
  type BodySink,
  collectBytes,
  type Exchange,
  type ExchangeInit,
  type FetchLike,
  retryAfterMs,
  TransportError,
  
  truncate,
} from "../http-out/exchange";
export type ProviderFailureKind =
  /** The request may have been acted on (for a send, the outcome is unknown). */
  | "timeout"
  | "network"
  | "http"
  /** Not what the API documents: a redirect, a body over the cap, not JSON, the wrong shape. */
  | "garbage";

export const FORBIDDEN_PROVIDER_DESTINATION = `${FORBIDDEN_DESTINATION}; for a provider on this machine or the local network, the operator sets PROVIDER_ALLOW_PRIVATE=true`;

/** PUBLIC_URL's and FILES_PUBLIC_URL's: a provider URL may not point back at us. */
function ownHosts(): string[] {
  const c = config();
  return [c.PUBLIC_URL, c.FILES_PUBLIC_URL].flatMap((u) => (u && URL.canParse(u) ? [unbracketed(new URL(u).hostname)] : []));
}

export function providerUrlProblem(url: string): string | null {
  try {
    checkProviderUrl(url, { allowPrivate: config().providerAllowPrivate, ownHosts: ownHosts() });
    return null;
  } catch (err) {
    return err instanceof ForbiddenAddressError ? FORBIDDEN_PROVIDER_DESTINATION : (err as Error).message;
  }
}

/** When a line is connected, so a name pointing inside the network is refused before it is stored; null when it does not resolve now. */
export async function providerHostProblem(url: string): Promise<string | null> {
  if (config().providerAllowPrivate || !URL.canParse(url)) return null;
  const host = unbracketed(new URL(url).hostname);
  if (net.isIP(host)) return null; // a literal address is judged on the URL (providerUrlProblem)
  const addresses = await new Promise<dns.LookupAddress[]>((resolve) => dns.lookup(host, { all: true }, (err, found) => resolve(err ? [] : found)));
  return addresses.some((a) => isForbiddenAddress(a.address) || isOwnAddress(a.address)) ? FORBIDDEN_PROVIDER_DESTINATION : null;
}

const providerTransport = guardedTransport({
  check: (url) => checkProviderUrl(url, { allowPrivate: config().providerAllowPrivate, ownHosts: ownHosts() }),
  lookup: () => guardedLookup(config().providerAllowPrivate),
  forbidden: FORBIDDEN_PROVIDER_DESTINATION,
});

export function exchange(url: string, init: ExchangeInit, doFetch?: FetchLike): Promise<Exchange> {
  return send(url, init, doFetch ? fetchTransport(doFetch) : providerTransport);
}

export function mediaType(headers: AnswerHeaders): string | null {
  const essence = headers.get("content-type")?.split(";")[0]?.trim().toLowerCase();
  return essence || null;
}

/** So that an error page, a JSON document or anything else a URL answers is never stored as a file. */
export function isMessageMediaType(type: string | null): boolean {
  if (!type) return false;
  if (type.startsWith("image/") || type.startsWith("audio/") || type.startsWith("video/")) return true;
  return ["application/pdf", "text/vcard", "text/x-vcard", "text/calendar", "text/csv", "text/rtf", "text/richtext", "text/directory"].includes(type);
}

// Longer secrets first, so one that contains another is replaced whole; secrets under 3 characters
// are left (they would starve every message of its letters and hide nothing).
export function scrubber(secrets: readonly (string | null | undefined)[]): (s: string) => string {
  const list = [...new Set(secrets.filter((s): s is string => !!s && s.length >= 3))].sort((a, b) => b.length - a.length);
  return (s) => list.reduce((out, secret) => out.split(secret).join("***"), s);
}

/** Scrub first (`scrubber`), so no secret is cut in half. */
export function excerpt(text: string, max: number): string {
  return truncate(text.replace(/\s+/g, " ").trim(), max);
}

export function issueList(issues: readonly { path: readonly PropertyKey[]; message: string }[]): string {
  return issues
    .slice(0, 3)
    .map((i) => `${i.path.map(String).join(".") || "(root)"}: ${i.message}`)
    .join("; ");
}

// What the provider clients (server/platform/<name>/client.ts) share on top of the outbound
// HTTP core (../http-out): the guarded fetch every provider request goes through, the failure
// kinds every client reports, and the reading of answers: media types, secrets scrubbed from
// anything that came from the server or the network stack, error excerpts. Each client keeps
// its own error class; what a failure means for a send is decided by its platform layer.
//
// Provider URLs are chosen by account owners, so unless PROVIDER_ALLOW_PRIVATE is set they may
// not reach loopback, private, link-local (cloud metadata) or this service's own addresses,
// judged on the URL and again on every address the name resolves to at connect time.

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
/**
 * What a failed provider call proves, the kinds every provider client's error class reports
 * (a client may add its own, such as "too_large" for downloads).
 */
export type ProviderFailureKind =
  /** Our deadline passed: the request may have been acted on (for a send, the outcome is unknown). */
  | "timeout"
  /** Refused, reset or dropped: `sentRequest` says whether it may have reached the server. */
  | "network"
  /** The server answered an error status. */
  | "http"
  /** An answer that is not what the API documents: a redirect, a body over the cap, not JSON, the wrong shape. */
  | "garbage";

/** Why a provider URL was refused before anything was sent, for error messages and probes. */
export const FORBIDDEN_PROVIDER_DESTINATION = `${FORBIDDEN_DESTINATION}; for a provider on this machine or the local network, the operator sets PROVIDER_ALLOW_PRIVATE=true`;

/** The service's own public host names (PUBLIC_URL, FILES_PUBLIC_URL): a provider URL may not point back at it. */
function ownHosts(): string[] {
  const c = config();
  return [c.PUBLIC_URL, c.FILES_PUBLIC_URL].flatMap((u) => (u && URL.canParse(u) ? [unbracketed(new URL(u).hostname)] : []));
}

/** Checks a provider URL as the transport will (for settings schemas): a readable reason, or null when allowed. */
export function providerUrlProblem(url: string): string | null {
  try {
    checkProviderUrl(url, { allowPrivate: config().providerAllowPrivate, ownHosts: ownHosts() });
    return null;
  } catch (err) {
    return err instanceof ForbiddenAddressError ? FORBIDDEN_PROVIDER_DESTINATION : (err as Error).message;
  }
}

/**
 * What the guard will say of a provider URL's host name once resolved (when a line is
 * connected, so a name that points inside the network is refused before it is stored): a
 * readable reason, or null when allowed or when the name does not resolve now (the probe then
 * reports that). Every request checks again at connect time.
 */
export async function providerHostProblem(url: string): Promise<string | null> {
  if (config().providerAllowPrivate || !URL.canParse(url)) return null;
  const host = unbracketed(new URL(url).hostname);
  if (net.isIP(host)) return null; // a literal address is judged on the URL (providerUrlProblem)
  const addresses = await new Promise<dns.LookupAddress[]>((resolve) => dns.lookup(host, { all: true }, (err, found) => resolve(err ? [] : found)));
  return addresses.some((a) => isForbiddenAddress(a.address) || isOwnAddress(a.address)) ? FORBIDDEN_PROVIDER_DESTINATION : null;
}

/** The guarded transport of every provider request. */
const providerTransport = guardedTransport({
  check: (url) => checkProviderUrl(url, { allowPrivate: config().providerAllowPrivate, ownHosts: ownHosts() }),
  lookup: () => guardedLookup(config().providerAllowPrivate),
  forbidden: FORBIDDEN_PROVIDER_DESTINATION,
});

/** One provider request through the core (../http-out/exchange.ts): guarded, unless a test gives its own fetch. */
export function exchange(url: string, init: ExchangeInit, doFetch?: FetchLike): Promise<Exchange> {
  return send(url, init, doFetch ? fetchTransport(doFetch) : providerTransport);
}

/** The media type of a Content-Type header, lowercased, without parameters. */
export function mediaType(headers: AnswerHeaders): string | null {
  const essence = headers.get("content-type")?.split(";")[0]?.trim().toLowerCase();
  return essence || null;
}

/**
 * Whether a media type is one a message attachment may have (MMS media: images, audio, video,
 * PDF, contact and calendar cards): what a provider's media answer must be, so that an error
 * page, a JSON document or anything else a URL answers is never stored as a file.
 */
export function isMessageMediaType(type: string | null): boolean {
  if (!type) return false;
  if (type.startsWith("image/") || type.startsWith("audio/") || type.startsWith("video/")) return true;
  return ["application/pdf", "text/vcard", "text/x-vcard", "text/calendar", "text/csv", "text/rtf", "text/richtext", "text/directory"].includes(type);
}

/**
 * A function that replaces every secret (password, token, the Authorization value) with "***"
 * in a string that came from the server or the network stack; longer secrets first, so one
 * that contains another is replaced whole. Secrets shorter than 3 characters are left (they
 * would starve every message of its letters and hide nothing).
 */
export function scrubber(secrets: readonly (string | null | undefined)[]): (s: string) => string {
  const list = [...new Set(secrets.filter((s): s is string => !!s && s.length >= 3))].sort((a, b) => b.length - a.length);
  return (s) => list.reduce((out, secret) => out.split(secret).join("***"), s);
}

/** The start of a body for an error message, on one line: scrub it first (`scrubber`), so no secret is cut in half. */
export function excerpt(text: string, max: number): string {
  return truncate(text.replace(/\s+/g, " ").trim(), max);
}

/** The first issues of a zod error, for an error message ("data.0.guid: Required; …"). */
export function issueList(issues: readonly { path: readonly PropertyKey[]; message: string }[]): string {
  return issues
    .slice(0, 3)
    .map((i) => `${i.path.map(String).join(".") || "(root)"}: ${i.message}`)
    .join("; ");
}

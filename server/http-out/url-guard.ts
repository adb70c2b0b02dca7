import dns from "node:dns";
import net from "node:net";
import os from "node:os";

// Users choose these URLs and the server fetches them (SSRF). checkWebhookUrl judges literal
// addresses and local names; guardedLookup judges every address a name resolves to at connect
// time, so DNS rebinding is caught on the address actually connected to.

export const MAX_URL_LENGTH = 2048;

function v4(cidrs: readonly string[]): Array<readonly [number, number]> {
  return cidrs.map((cidr) => {
    const [base, bits] = cidr.split("/") as [string, string];
    return [ipv4ToInt(base), Number(bits)] as const;
  });
}

const FORBIDDEN_V4 = v4([
  "0.0.0.0/8", // "this network", including the unspecified 0.0.0.0
  "10.0.0.0/8",
  "100.64.0.0/10", // carrier-grade NAT
  "127.0.0.0/8",
  "169.254.0.0/16", // link-local, cloud metadata at 169.254.169.254
  "172.16.0.0/12",
  "192.0.0.0/24", // IETF protocol assignments
  "192.168.0.0/16",
  "198.18.0.0/15", // benchmarking
  "224.0.0.0/4", // multicast
  "240.0.0.0/4", // reserved, including broadcast 255.255.255.255
]);

function ipv4ToInt(ip: string): number {
  return ip.split(".").reduce((n, octet) => n * 256 + Number(octet), 0);
}

function forbiddenV4(n: number): boolean {
  return FORBIDDEN_V4.some(([base, bits]) => Math.floor(n / 2 ** (32 - bits)) === Math.floor(base / 2 ** (32 - bits)));
}

function ipv6Groups(ip: string): number[] {
  let text = ip;
  // The dotted IPv4 tail, if any, is what follows the last colon (an anchored test: linear).
  const tailStart = text.lastIndexOf(":") + 1;
  const dotted = text.slice(tailStart);
  if (/^\d+\.\d+\.\d+\.\d+$/.test(dotted)) {
    const n = ipv4ToInt(dotted);
    text = `${text.slice(0, tailStart)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [head = "", tail] = text.split("::");
  const parse = (part: string) => (part ? part.split(":").map((g) => parseInt(g, 16)) : []);
  if (tail === undefined) return parse(head);
  const h = parse(head);
  const t = parse(tail);
  return [...h, ...new Array<number>(8 - h.length - t.length).fill(0), ...t];
}

function forbiddenV6(g: number[]): boolean {
  const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0, g5 = 0, g6 = 0, g7 = 0] = g;
  const embeddedV4 = g6 * 0x10000 + g7;
  // ::/96 and ::ffff:0:0/96 (IPv4-mapped) connect to the embedded IPv4 address (:: and ::1 fall in
  // 0/8); 64:ff9b::/96 (NAT64) reaches it through the translator: all judged as that IPv4.
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0 && (g5 === 0 || g5 === 0xffff)) return forbiddenV4(embeddedV4);
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) return forbiddenV4(embeddedV4);
  return (
    (g0 & 0xfe00) === 0xfc00 || // fc00::/7 unique local
    (g0 & 0xff80) === 0xfe80 || // fe80::/10 link-local and the deprecated site-local fec0::/10
    (g0 & 0xff00) === 0xff00 // ff00::/8 multicast
  );
}

export function unbracketed(hostname: string): string {
  return hostname.replace(/^\[(.*)\]$/, "$1");
}

export function isForbiddenAddress(ip: string): boolean {
  const host = unbracketed(ip);
  const zone = host.indexOf("%"); // an IPv6 zone id; not a regexp, which backtracks on many '%'
  const address = zone < 0 ? host : host.slice(0, zone);
  if (net.isIPv4(address)) return forbiddenV4(ipv4ToInt(address));
  if (net.isIPv6(address)) return forbiddenV6(ipv6Groups(address));
  return false;
}

/** Never names the address: that would tell whoever chose a host name what it resolves to inside our network. */
export const FORBIDDEN_DESTINATION = "destination not allowed (private, loopback, link-local or metadata addresses are not allowed)";

// RFC 6761 localhost, and the private-use .internal TLD (metadata.google.internal).
function isLocalName(hostname: string): boolean {
  const lower = hostname.toLowerCase();
  const name = lower.endsWith(".") ? lower.slice(0, -1) : lower;
  return name === "localhost" || name.endsWith(".localhost") || name.endsWith(".internal");
}

export function checkWebhookUrl(url: string, { allowInsecure }: { allowInsecure: boolean }): URL {
  if (url.length > MAX_URL_LENGTH) throw new Error(`url must be at most ${MAX_URL_LENGTH} characters`);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error("url must be an absolute URL");
  }
  if (parsed.protocol !== "https:" && !(allowInsecure && parsed.protocol === "http:")) {
    throw new Error(allowInsecure ? "url must use http or https" : "url must use https");
  }
  if (parsed.username || parsed.password) throw new Error("url must not contain credentials");
  if (!allowInsecure) {
    // The URL parser has already normalised numeric forms (http://2130706433, 0x7f.1) to
    // dotted IPv4 and IPv6 to its compressed form.
    const host = unbracketed(parsed.hostname);
    if (isForbiddenAddress(host)) throw new Error(FORBIDDEN_DESTINATION);
    if (isLocalName(host)) throw new Error("destination not allowed (local host names such as localhost are not allowed)");
  }
  return parsed;
}

export class ForbiddenAddressError extends Error {
  readonly code = "EFORBIDDENADDRESS";

  constructor(
    readonly hostname: string,
    readonly address: string,
  ) {
    super(FORBIDDEN_DESTINATION);
    this.name = "ForbiddenAddressError";
  }
}

let ownAddresses: Set<string> | null = null;

/** This machine's own interface addresses (a public one included): the service itself. */
export function isOwnAddress(ip: string): boolean {
  if (!ownAddresses) {
    ownAddresses = new Set<string>();
    for (const list of Object.values(os.networkInterfaces())) for (const a of list ?? []) ownAddresses.add(a.address.toLowerCase());
  }
  return ownAddresses.has(ip.toLowerCase());
}

/** dns.lookup that fails when any resolved address is forbidden or our own: all are checked, as happy eyeballs may try several. */
export function guardedLookup(allowInsecure: boolean): net.LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, options.all ? [] : "");
      const bad = allowInsecure ? undefined : addresses.find((a) => isForbiddenAddress(a.address) || isOwnAddress(a.address));
      if (bad) return callback(new ForbiddenAddressError(hostname, bad.address), options.all ? [] : "");
      if (options.all) return callback(null, addresses);
      const [first] = addresses;
      if (!first) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: "ENOTFOUND" }), "");
      callback(null, first.address, first.family);
    });
  };
}

/** Throws ForbiddenAddressError for a destination not allowed (`ownHosts`: this service's public host names), an Error for a malformed URL. */
export function checkProviderUrl(url: string, { allowPrivate, ownHosts = [] }: { allowPrivate: boolean; ownHosts?: readonly string[] }): URL {
  if (url.length > MAX_URL_LENGTH) throw new Error(`must be at most ${MAX_URL_LENGTH} characters`);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error("must be an absolute URL");
  }
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:") throw new Error("must be an http:// or https:// URL");
  if (parsed.username || parsed.password) throw new Error("must not contain credentials");
  if (!allowPrivate) {
    const host = unbracketed(parsed.hostname).toLowerCase();
    const own = ownHosts.some((h) => h.toLowerCase() === host);
    if (isForbiddenAddress(host) || isLocalName(host) || isOwnAddress(host) || own) throw new ForbiddenAddressError(host, host);
  }
  return parsed;
}

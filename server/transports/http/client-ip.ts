import { isIP } from "node:net";
import { config } from "../../kernel/config";
import { clientAddressOf } from "../../observability/request-context";

/**
 * The client's IP address for per-address limits. Behind TRUST_PROXY_HOPS proxies it is the
 * X-Forwarded-For entry that many hops from the right: each proxy appends the address it took
 * the connection from, so entries further left are whatever the client sent and may be forged
 * (with fewer entries than hops, the leftmost). Without proxies (0) it is the connection's
 * peer address, as the HTTP hook recorded it. Null when unknown (a handler called outside a
 * server, a malformed header).
 */
export function clientIp(headers: Headers): string | null {
  const hops = config().proxyHops;
  if (hops === 0) return normalized(clientAddressOf(headers));
  const entries = (headers.get("x-forwarded-for") ?? "").split(",");
  return normalized(entries[Math.max(0, entries.length - hops)]?.trim());
}

/** A valid address, lower-case, IPv4-mapped IPv6 as plain IPv4; else null. */
function normalized(address: string | undefined): string | null {
  if (!address) return null;
  const plain = address.toLowerCase().startsWith("::ffff:") && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
  return isIP(plain) ? plain.toLowerCase() : null;
}

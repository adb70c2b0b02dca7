import { isIP } from "node:net";
import { config } from "../../kernel/config";
import { clientAddressOf } from "../../observability/request-context";

// Behind TRUST_PROXY_HOPS proxies, the X-Forwarded-For entry that many from the right: entries
// further left are the client's own and may be forged. Else the peer address the HTTP hook saw.
export function clientIp(headers: Headers): string | null {
  const hops = config().proxyHops;
  if (hops === 0) return normalized(clientAddressOf(headers));
  const entries = (headers.get("x-forwarded-for") ?? "").split(",");
  return normalized(entries[Math.max(0, entries.length - hops)]?.trim());
}

/** IPv4-mapped IPv6 as plain IPv4. */
function normalized(address: string | undefined): string | null {
  if (!address) return null;
  const plain = address.toLowerCase().startsWith("::ffff:") && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
  return isIP(plain) ? plain.toLowerCase() : null;
}

import { isIP } from "node:net";
import { config } from "../config";

/**
 * The client's IP address for per-address limits: X-Forwarded-For's first hop when
 * TRUST_PROXY says a proxy sets it, else null (unknown). Next.js only fills the header in when
 * the client sent none, so without a proxy it is whatever the client chose to send.
 */
export function clientIp(headers: Headers): string | null {
  if (!config().TRUST_PROXY) return null;
  const first = headers.get("x-forwarded-for")?.split(",")[0]?.trim() ?? "";
  return isIP(first) ? first.toLowerCase() : null;
}

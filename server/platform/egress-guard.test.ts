import dns, { type LookupAddress } from "node:dns";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { listenLoopback, type Loopback } from "../../tests/fakes/http";
import { parseConfig, resetConfig } from "../kernel/config";
import { trimTrailingSlashes } from "../kernel/strings";
import { exchange, providerUrlProblem, TransportError } from "./http";

// The provider address guard on the shared transport: with PROVIDER_ALLOW_PRIVATE off, no
// request leaves for loopback, private, link-local (metadata) or own addresses, whether the URL
// names one or a host name resolves to one. Targets are loopback servers, and host names are
// resolved by a stubbed resolver: nothing is ever sent to a private or link-local address.

const failure = (p: Promise<unknown>) => p.then(() => null, (e: unknown) => e as TransportError);

function allowPrivate(on: boolean): void {
  process.env.PROVIDER_ALLOW_PRIVATE = on ? "true" : "false";
  resetConfig();
}

/** dns.lookup answering `names` from the table, everything else as usual. */
function stubResolver(names: Record<string, string>): void {
  const real = dns.lookup.bind(dns);
  vi.spyOn(dns, "lookup").mockImplementation(((hostname: string, options: unknown, callback: (err: Error | null, addresses: LookupAddress[]) => void) => {
    const address = names[hostname];
    if (!address) return (real as (...args: unknown[]) => void)(hostname, options, callback);
    process.nextTick(() => callback(null, [{ address, family: address.includes(":") ? 6 : 4 }]));
  }) as unknown as typeof dns.lookup);
}

let server: Loopback;
let hits = 0;
beforeEach(async () => {
  hits = 0;
  server = await listenLoopback((_req, res) => {
    hits++;
    res.writeHead(200, { "content-type": "application/json" });
    res.end('{"secret":"metadata credentials"}');
  });
});
afterEach(async () => {
  vi.restoreAllMocks();
  allowPrivate(true);
  await server.close();
});

describe("provider address guard (PROVIDER_ALLOW_PRIVATE off)", () => {
  it("refuses a literal loopback address before connecting: nothing reaches it, nothing is read back", async () => {
    allowPrivate(false);
    for (const url of [server.url, server.url.replace("127.0.0.1", "localhost"), server.url.replace("127.0.0.1", "[::ffff:127.0.0.1]")]) {
      const e = await failure(exchange(`${url}/latest/meta-data`, { method: "GET", timeoutMs: 2_000, maxBytes: 1_000 }));
      expect(e).toBeInstanceOf(TransportError);
      expect(e).toMatchObject({ kind: "network", sentRequest: false, code: "EFORBIDDENADDRESS" });
      expect(e!.message).toContain("PROVIDER_ALLOW_PRIVATE=true");
    }
    expect(hits).toBe(0);
  });

  it("refuses a host name that resolves to a loopback, private or metadata address (checked at connect time)", async () => {
    allowPrivate(false);
    stubResolver({ "mac.example.test": "127.0.0.1", "rebind.example.test": "10.1.2.3", "metadata.example.test": "169.254.169.254" });
    const port = new URL(server.url).port;
    for (const host of ["mac.example.test", "rebind.example.test", "metadata.example.test"]) {
      const e = await failure(exchange(`http://${host}:${port}/`, { method: "POST", body: "{}", timeoutMs: 2_000, maxBytes: 1_000 }));
      expect(e).toMatchObject({ kind: "network", sentRequest: false, code: "EFORBIDDENADDRESS" });
    }
    expect(hits).toBe(0);
  });

  it("with PROVIDER_ALLOW_PRIVATE=true the same name and address are reached (a Mac or phone on the LAN)", async () => {
    allowPrivate(true);
    stubResolver({ "mac.example.test": "127.0.0.1" });
    const port = new URL(server.url).port;
    const res = await exchange(`http://mac.example.test:${port}/`, { method: "GET", timeoutMs: 2_000, maxBytes: 1_000 });
    expect(res.status).toBe(200);
    expect((await exchange(server.url, { method: "GET", timeoutMs: 2_000, maxBytes: 1_000 })).status).toBe(200);
    expect(hits).toBe(2);
  });

  it("judges settings URLs the same way, before anything is stored", () => {
    allowPrivate(false);
    for (const url of [
      "http://169.254.169.254/",
      "http://127.0.0.1:1234",
      "http://[::1]:1234",
      "http://10.0.0.5:8080",
      "http://192.168.1.20:1234",
      "http://localhost:3000",
      "http://metadata.google.internal/",
      "http://2130706433/",
    ]) {
      expect(providerUrlProblem(url), url).toContain("destination not allowed");
    }
    expect(providerUrlProblem("https://api.twilio.com")).toBeNull();
    expect(providerUrlProblem(`https://a.example/${"x".repeat(2100)}`)).toBe("must be at most 2048 characters");
    allowPrivate(true);
    expect(providerUrlProblem("http://192.168.1.20:1234")).toBeNull();
  });
});

describe("trimTrailingSlashes", () => {
  it("trims any number of trailing slashes in one pass", () => {
    expect(trimTrailingSlashes(`http://a${"/".repeat(128 * 1024)}`)).toBe("http://a");
    expect(trimTrailingSlashes("http://a/b/")).toBe("http://a/b");
    expect(trimTrailingSlashes("///")).toBe("");
    expect(trimTrailingSlashes("x")).toBe("x");
  });
});

describe("PROVIDER_ALLOW_PRIVATE", () => {
  it("is off by default except under NODE_ENV=development; an explicit value wins", () => {
    expect(parseConfig({ NODE_ENV: "production" }).providerAllowPrivate).toBe(false);
    expect(parseConfig({ NODE_ENV: "staging" }).providerAllowPrivate).toBe(false);
    expect(parseConfig({ NODE_ENV: "test" }).providerAllowPrivate).toBe(false);
    expect(parseConfig({ NODE_ENV: "development" }).providerAllowPrivate).toBe(true);
    expect(parseConfig({ NODE_ENV: "production", PROVIDER_ALLOW_PRIVATE: "true" }).providerAllowPrivate).toBe(true);
    expect(parseConfig({ NODE_ENV: "development", PROVIDER_ALLOW_PRIVATE: "false" }).providerAllowPrivate).toBe(false);
  });
});

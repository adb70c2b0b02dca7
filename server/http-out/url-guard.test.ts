import type { LookupAddress } from "node:dns";
import { describe, expect, it } from "vitest";
import { checkWebhookUrl, guardedLookup, isForbiddenAddress } from "./url-guard";

describe("isForbiddenAddress", () => {
  it.each([
    "0.0.0.0", "0.1.2.3", "10.0.0.1", "100.64.0.1", "100.127.255.254", "127.0.0.1", "127.255.0.9",
    "169.254.169.254", "172.16.0.1", "172.31.255.255", "192.0.0.8", "192.168.1.1", "198.18.0.1",
    "198.19.255.255", "224.0.0.1", "239.255.255.250", "240.0.0.1", "255.255.255.255",
    "::", "::1", "[::1]", "fc00::1", "fd12:3456::1", "fe80::1", "fe80::1%eth0", "febf::1", "ff02::1",
    "::ffff:127.0.0.1", "::ffff:7f00:1", "::ffff:169.254.169.254", "::ffff:10.0.0.1",
    "64:ff9b::127.0.0.1", "64:ff9b::a9fe:a9fe", "0:0:0:0:0:0:0:1",
  ])("forbids %s", (ip) => expect(isForbiddenAddress(ip)).toBe(true));

  it.each([
    "1.1.1.1", "8.8.8.8", "100.63.255.255", "100.128.0.0", "172.15.255.255", "172.32.0.0",
    "192.0.1.1", "192.169.0.1", "198.17.255.255", "198.20.0.0", "223.255.255.255", "169.253.0.1",
    "2606:4700:4700::1111", "2001:db8::1", "::ffff:8.8.8.8", "64:ff9b::8.8.8.8", "fbff::1", "fe7f::1",
    "example.com", "not an ip",
  ])("allows %s", (ip) => expect(isForbiddenAddress(ip)).toBe(false));
});

describe("checkWebhookUrl", () => {
  const secure = { allowInsecure: false };
  const insecure = { allowInsecure: true };

  it("accepts public https URLs and returns them parsed", () => {
    const url = checkWebhookUrl("https://hooks.example.com:8443/in?x=1", secure);
    expect(url.hostname).toBe("hooks.example.com");
    expect(checkWebhookUrl("https://8.8.8.8/", secure).href).toBe("https://8.8.8.8/");
  });

  it("requires https unless insecure URLs are allowed", () => {
    expect(() => checkWebhookUrl("http://example.com/", secure)).toThrow("url must use https");
    expect(checkWebhookUrl("http://example.com/", insecure).protocol).toBe("http:");
    expect(() => checkWebhookUrl("ftp://example.com/", insecure)).toThrow("url must use http or https");
  });

  it("rejects unparseable, overlong and credentialed URLs", () => {
    expect(() => checkWebhookUrl("example.com/hook", secure)).toThrow("absolute URL");
    expect(() => checkWebhookUrl(`https://example.com/${"a".repeat(2048)}`, secure)).toThrow("at most 2048");
    expect(checkWebhookUrl(`https://example.com/${"a".repeat(2048 - 20)}`, secure)).toBeInstanceOf(URL);
    expect(() => checkWebhookUrl("https://user:pw@example.com/", insecure)).toThrow("credentials");
    expect(() => checkWebhookUrl("https://user@example.com/", insecure)).toThrow("credentials");
  });

  it.each([
    "https://127.0.0.1/", "https://[::1]:8443/", "https://169.254.169.254/latest/meta-data",
    "https://2130706433/", "https://0x7f.1/", "https://017700000001/", "https://[::ffff:10.1.2.3]/",
    "https://0.0.0.0/", "https://10.0.0.5:3000/x",
  ])("rejects the local address in %s", (url) => {
    expect(() => checkWebhookUrl(url, secure)).toThrow(/^destination not allowed \(private, loopback, link-local or metadata addresses are not allowed\)$/);
  });

  it.each(["https://localhost/", "https://LOCALHOST./", "https://api.localhost/", "https://metadata.google.internal/", "https://db.internal/"])(
    "rejects the local name in %s",
    (url) => expect(() => checkWebhookUrl(url, secure)).toThrow(/^destination not allowed \(local host names/),
  );

  it("allows local targets when insecure URLs are allowed (development)", () => {
    expect(checkWebhookUrl("http://127.0.0.1:4000/hook", insecure).port).toBe("4000");
    expect(checkWebhookUrl("http://localhost/hook", insecure).hostname).toBe("localhost");
  });
});

describe("guardedLookup", () => {
  function lookup(allowInsecure: boolean, hostname: string, all: boolean) {
    return new Promise<{ err: NodeJS.ErrnoException | null; address: string | LookupAddress[] }>((resolve) => {
      guardedLookup(allowInsecure)(hostname, { all }, (err, address) => resolve({ err, address }));
    });
  }

  it("fails with EFORBIDDENADDRESS for a name resolving to loopback", async () => {
    for (const all of [false, true]) {
      const { err } = await lookup(false, "localhost", all);
      expect(err?.code).toBe("EFORBIDDENADDRESS");
      expect(err?.message).toBe("destination not allowed (private, loopback, link-local or metadata addresses are not allowed)");
      expect(err?.message).not.toMatch(/127\.0\.0\.1|::1/);
    }
  });

  it("resolves in the shape asked for when allowed", async () => {
    const one = await lookup(true, "localhost", false);
    expect(one.err).toBeNull();
    expect(typeof one.address).toBe("string");
    const many = await lookup(true, "localhost", true);
    expect(Array.isArray(many.address) && many.address.length).toBeGreaterThan(0);
  });

  it("resolves IP literals like dns.lookup, judging them the same way", async () => {
    expect((await lookup(false, "8.8.8.8", false)).address).toBe("8.8.8.8");
    expect((await lookup(false, "10.1.1.1", true)).err?.code).toBe("EFORBIDDENADDRESS");
  });
});

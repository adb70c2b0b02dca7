import type { NextConfig } from "next";
import { describe, expect, it } from "vitest";

// next.config.mjs is plain JavaScript (no declarations); typed here as what Next reads.
const configModule = "../next.config.mjs";
const loadConfig = async () => ((await import(/* @vite-ignore */ configModule)) as { default: NextConfig }).default;

// The dashboard and sign-in pages answer with headers that forbid framing (clickjacking of the
// key and webhook pages) and restrict where the page may post or re-base to.

describe("next.config headers", () => {
  it("the dashboard and auth pages carry frame-ancestors 'none', X-Frame-Options DENY and safe CSP directives", async () => {
    const rules = await (await loadConfig()).headers!();
    const bySource = new Map(rules.map((r) => [r.source, Object.fromEntries(r.headers.map((h) => [h.key.toLowerCase(), h.value])) as Record<string, string>]));
    for (const source of ["/dashboard", "/dashboard/:path*", "/sign-in", "/sign-up"]) {
      const headers = bySource.get(source);
      expect(headers, source).toBeDefined();
      const csp = headers!["content-security-policy"]!.split(";").map((d) => d.trim());
      expect(csp).toEqual(expect.arrayContaining(["frame-ancestors 'none'", "base-uri 'self'", "form-action 'self'", "object-src 'none'"]));
      // Next's inline bootstrap scripts must keep working: no script-src or default-src here.
      expect(csp.some((d) => d.startsWith("script-src") || d.startsWith("default-src"))).toBe(false);
      expect(headers!["x-frame-options"]).toBe("DENY");
      expect(headers!["x-content-type-options"]).toBe("nosniff");
    }
  });
});

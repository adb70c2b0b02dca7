import type { NextConfig } from "next";
import { PHASE_DEVELOPMENT_SERVER, PHASE_PRODUCTION_BUILD, PHASE_PRODUCTION_SERVER } from "next/constants";
import { describe, expect, it } from "vitest";

// next.config.mjs is plain JavaScript (no declarations); typed here as what Next reads: a
// function of the phase (next build, next start, next dev).
const configModule = "../next.config.mjs";
const loadConfig = async (phase = PHASE_PRODUCTION_SERVER) =>
  ((await import(/* @vite-ignore */ configModule)) as { default: (phase: string) => NextConfig }).default(phase);

// The dashboard, sign-in pages and the API reference answer with headers that forbid framing
// (clickjacking of the key and webhook pages, and of the reference's console, where a key is
// pasted) and restrict where the page may post or re-base to.

describe("next.config headers", () => {
  it("the dashboard, auth pages and /docs carry frame-ancestors 'none', X-Frame-Options DENY and safe CSP directives", async () => {
    const rules = await (await loadConfig()).headers!();
    const bySource = new Map(rules.map((r) => [r.source, Object.fromEntries(r.headers.map((h) => [h.key.toLowerCase(), h.value])) as Record<string, string>]));
    for (const source of ["/dashboard", "/dashboard/:path*", "/sign-in", "/sign-up", "/docs"]) {
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

// The Dockerfile ships .next/standalone (completed by deploy/prepare-standalone.mjs): the build
// must write it, with the migrations the server applies on start.
describe("next.config standalone output", () => {
  it("next build writes .next/standalone, rooted at the repository, with prisma/migrations in every route's trace", async () => {
    const config = await loadConfig(PHASE_PRODUCTION_BUILD);
    expect(config.output).toBe("standalone");
    expect(config.outputFileTracingRoot).toBe(process.cwd());
    expect(config.outputFileTracingIncludes?.["/*"]).toContain("./prisma/migrations/**/*");
  });

  it("npm start and next dev run without it (Next would warn that next start does not work)", async () => {
    for (const phase of [PHASE_PRODUCTION_SERVER, PHASE_DEVELOPMENT_SERVER]) {
      const config = await loadConfig(phase);
      expect(config.output).toBeUndefined();
      expect(config.serverExternalPackages).toEqual((await loadConfig(PHASE_PRODUCTION_BUILD)).serverExternalPackages);
    }
  });
});

// `next dev` prints a line per request with its full URL: the query, where an inbound URL's
// ?token= and a file link's signature travel, must never reach it (our own request log
// records the path only).
describe("next.config logging", () => {
  it("next dev's request line leaves out every request with a query string (Next's own filter, with our config)", async () => {
    const { ignoreLoggingIncomingRequests } = (await import("next/dist/server/dev/log-requests.js")) as unknown as {
      ignoreLoggingIncomingRequests: (request: { url: string }, logging: NextConfig["logging"]) => boolean;
    };
    const logging = (await loadConfig(PHASE_DEVELOPMENT_SERVER)).logging;
    for (const url of ["/api/inbound/ln_01m8911r1svcjbnws49kkjf72s?token=secret-token", "/api/files/file_x?expires=1&signature=abc", "/sign-in?callbackUrl=%2Fdashboard"]) {
      expect(ignoreLoggingIncomingRequests({ url }, logging), url).toBe(true);
    }
    expect(ignoreLoggingIncomingRequests({ url: "/dashboard/chats" }, logging)).toBe(false);
  });
});

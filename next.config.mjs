import path from "node:path";
import { fileURLToPath } from "node:url";
import { PHASE_PRODUCTION_BUILD } from "next/constants.js";

// The dashboard, sign-in pages and the API reference at /docs (its console takes an API key)
// may not be framed (clickjacking) and may not be re-based or post forms elsewhere. Scripts
// are not restricted here: Next's App Router emits inline scripts, which a script-src without
// nonces would break.
const PAGE_CSP = ["frame-ancestors 'none'", "base-uri 'self'", "form-action 'self'", "object-src 'none'"].join("; ");

const pageHeaders = [
  { key: "Content-Security-Policy", value: PAGE_CSP },
  { key: "X-Frame-Options", value: "DENY" },
  { key: "X-Content-Type-Options", value: "nosniff" },
  { key: "Referrer-Policy", value: "same-origin" },
];

/** @type {import('next').NextConfig} */
const nextConfig = {
  // Packages that load WebAssembly or native bindings from their own folders at run time.
  serverExternalPackages: [
    "@electric-sql/pglite",
    "@electric-sql/pglite-socket",
    "pglite-prisma-adapter",
    "@prisma/adapter-pg",
    "@prisma/client",
    "pg",
  ],
  // The repository, whatever lockfiles its parent folders hold: server.js lands at the top of
  // .next/standalone (a parent's lockfile would nest it under the folder's name).
  outputFileTracingRoot: path.dirname(fileURLToPath(import.meta.url)),
  outputFileTracingIncludes: {
    // Migrations are applied on start (server/db/migrations.ts reads prisma/migrations from the
    // working directory; the tracer finds them by that path today, listed here so a refactor of
    // that path cannot drop them silently).
    "/*": ["./prisma/migrations/**/*"],
  },
  poweredByHeader: false,
  logging: {
    // `next dev` prints each request's URL with its query, where secrets travel (an inbound
    // URL's ?token=, a file link's signature): requests with a query are left to our own
    // request log, which records the path only (server/observability/log.ts).
    incomingRequests: { ignore: [/\?/] },
  },
  async headers() {
    return ["/dashboard", "/dashboard/:path*", "/sign-in", "/sign-up", "/docs"].map((source) => ({ source, headers: pageHeaders }));
  },
};

/**
 * `next build` also writes .next/standalone: server.js with only the files the server loads at
 * run time (node_modules traced from the server bundles), for small deploy images (Dockerfile);
 * deploy/prepare-standalone.mjs completes it (static assets, public/, the operator CLI). Set for
 * the build only: `npm start` serves .next as before, and with `output: "standalone"` in its
 * config Next would tell it, wrongly, that it "does not work" (the standalone server.js carries
 * its own copy of the build's config and never reads this file).
 * @param {string} phase
 * @returns {import('next').NextConfig}
 */
export default function config(phase) {
  return phase === PHASE_PRODUCTION_BUILD ? { ...nextConfig, output: "standalone" } : nextConfig;
}

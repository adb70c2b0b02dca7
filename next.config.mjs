// The dashboard and sign-in pages may not be framed (clickjacking) and may not be re-based or
// post forms elsewhere. Scripts are not restricted here: Next's App Router emits inline
// scripts, which a script-src without nonces would break.
const DASHBOARD_CSP = ["frame-ancestors 'none'", "base-uri 'self'", "form-action 'self'", "object-src 'none'"].join("; ");

const pageHeaders = [
  { key: "Content-Security-Policy", value: DASHBOARD_CSP },
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
  poweredByHeader: false,
  async headers() {
    return ["/dashboard", "/dashboard/:path*", "/sign-in", "/sign-up"].map((source) => ({ source, headers: pageHeaders }));
  },
};

export default nextConfig;

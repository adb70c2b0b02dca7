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
};

export default nextConfig;

// The baseline npm run bench measures /v1 against: a separate, minimal Next.js app (one route
// handler, nothing of ours), built with `next build` and run with `next start`. Our own
// per-request shell (scripts/start.mjs, request log, metrics, authentication) is then part of
// what the ratio charges to /v1.
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** @type {import('next').NextConfig} */
export default {
  poweredByHeader: false,
  // node_modules live at the repository's root.
  turbopack: { root },
  outputFileTracingRoot: root,
};

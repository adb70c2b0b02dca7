// npm start: Next's request handler as `next start` runs it, behind the fast routes of server/transports/http/fast-routes.ts
// on Node's own request and response (docs/benchmarks.md). Plain JavaScript on purpose: the route table comes from the
// app's own bundle (published on globalThis at startup), so no second copy of the server code is loaded.
import { existsSync, readFileSync } from "node:fs";
import http from "node:http";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import nextEnv from "@next/env";

const args = process.argv.slice(2);
function option(...names) {
  for (let i = 0; i < args.length; i++) {
    for (const name of names) {
      if (args[i] === name) return args[i + 1];
      if (args[i].startsWith(`${name}=`)) return args[i].slice(name.length + 1);
    }
  }
  return undefined;
}
const dir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
// The standalone tree has no next.config: the build's resolved config is in .next/required-server-files.json, passed to
// Next as the tree's server.js passes it (HOSTNAME and KEEP_ALIVE_TIMEOUT too).
const standalone = !existsSync(path.join(dir, "next.config.mjs")) && existsSync(path.join(dir, ".next", "required-server-files.json"));
if (standalone) {
  process.chdir(dir);
  const { config } = JSON.parse(readFileSync(path.join(dir, ".next", "required-server-files.json"), "utf8"));
  process.env.__NEXT_PRIVATE_STANDALONE_CONFIG ??= JSON.stringify(config);
}
// Before PORT and HOSTNAME are read; the operator CLI loads the same files (scripts/admin-env.ts).
nextEnv.loadEnvConfig(dir, false, { info: () => {}, error: (...a) => console.error(...a) });
const port = Number(option("-p", "--port") ?? process.env.PORT ?? 3000);
const hostname = option("-H", "--hostname") ?? (standalone ? process.env.HOSTNAME : undefined);
const keepAliveTimeout = option("--keepAliveTimeout") ?? (standalone ? process.env.KEEP_ALIVE_TIMEOUT : undefined);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`Invalid port: ${option("-p", "--port") ?? process.env.PORT}`);
  process.exit(1);
}
// As `next start` does, before Next is loaded.
process.env.NODE_ENV = "production";
// "Ready" is printed once the app has started, never before a refusal to start (which exits 1).
const started = new Promise((resolve) => {
  globalThis[Symbol.for("relay.on-started")] = resolve;
});
const { default: next } = await import("next");

const app = next({ dev: false, dir, hostname: hostname ?? "localhost", port });
const handle = app.getRequestHandler();
// As Next's router compresses (router-server.js): gzip or deflate from 1 KiB, and the zlib stream released when the client goes.
const require = createRequire(import.meta.url);
const compress = require("next/dist/compiled/compression")();
const { releaseCompressionStream } = require("next/dist/server/lib/release-compression-stream");
await app.prepare(); // then instrumentation.ts runs: the database, the runners and the route table

const fastRoutes = () => globalThis[Symbol.for("relay.fast-routes")];
// instrumentation.ts runs just after prepare() returns (Next does not wait for it), so the table
// appears a moment later; until then requests simply go through Next.

const server = http.createServer((req, res) => {
  const handler = fastRoutes()?.route(req);
  if (!handler) return void handle(req, res);
  compress(req, res, () => {});
  res.once("close", () => {
    if (!res.writableFinished) releaseCompressionStream(res);
  });
  handler(req, res).catch((err) => {
    const requestId = String(res.getHeader("request-id") ?? "");
    console.error(`[start] fast route failed (request ${requestId})`, err);
    if (!res.headersSent) res.writeHead(500, { "Content-Type": "application/json; charset=utf-8", Connection: "close" });
    const message = `An unexpected error occurred. Quote request ${requestId} when reporting it.`;
    res.end(JSON.stringify({ error: { type: "api_error", code: "internal_error", message }, request_id: requestId }));
  });
});
if (keepAliveTimeout !== undefined && Number(keepAliveTimeout) >= 0) server.keepAliveTimeout = Number(keepAliveTimeout);
server.on("error", (err) => {
  console.error(`[start] ${err.message}`);
  process.exit(1);
});
// Requests that come before the app has started wait for it in Next's handler.
server.listen(port, hostname, () => {
  const { port: bound } = server.address();
  void started.then(() => console.log(`> Ready on http://${hostname ?? "localhost"}:${bound}`));
});

// Methods no route serves and requests Node's parser refuses get the JSON envelope from the HTTP hook (methods.ts).

// SIGTERM and SIGINT belong to the app (server/boot/lifecycle.ts).

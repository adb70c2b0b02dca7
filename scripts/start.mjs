// npm start: the production server. It serves the production build (`npm run build`) the way
// `next start` does (same request handler, same options: -p/--port or PORT, -H/--hostname,
// --keepAliveTimeout; SIGTERM and SIGINT stop it gracefully, see server/boot/lifecycle.ts),
// and answers the routes of server/transports/http/fast-routes.ts (provider webhooks, and the /v1 routes of
// app/v1/route-table.ts) on Node's own request and response before Next's request handling,
// which costs more than the work of a small request (taking in a provider event, reading a
// page of chats): see docs/benchmarks.md. Their answers are compressed as Next compresses its
// own (its compression middleware, with next.config's default compress: true). Plain JavaScript
// on purpose: the route table comes from the app's own bundle (published on globalThis at
// startup), so no second copy of the server code is loaded.
// package.json runs it with --max-semi-space-size=64: a request through Next allocates a lot of
// short-lived objects, and a 64 MB young generation (V8's default is 16 MB) means fewer
// scavenges and less promoted to the old generation; see docs/benchmarks.md.
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
// In the standalone tree (deploy/prepare-standalone.mjs copies this file to scripts/start.mjs
// there; the Docker image runs it) there is no next.config: the build's resolved config is in
// .next/required-server-files.json, and it is passed to Next as the tree's own server.js passes
// it. There, as with server.js, HOSTNAME and KEEP_ALIVE_TIMEOUT also set the address and timeout.
const standalone = !existsSync(path.join(dir, "next.config.mjs")) && existsSync(path.join(dir, ".next", "required-server-files.json"));
if (standalone) {
  process.chdir(dir);
  const { config } = JSON.parse(readFileSync(path.join(dir, ".next", "required-server-files.json"), "utf8"));
  process.env.__NEXT_PRIVATE_STANDALONE_CONFIG ??= JSON.stringify(config);
}
// The .env files, as Next loads them for the server (production: .env.production.local,
// .env.local, .env.production, .env; none overrides the environment), here before PORT and
// HOSTNAME are read. The operator CLI loads the same files (scripts/admin-env.ts).
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
// server/boot/startup.ts calls this once the app has started (instrumentation.ts): "Ready" is
// printed then, never before a refusal to start (which exits 1).
const started = new Promise((resolve) => {
  globalThis[Symbol.for("relay.on-started")] = resolve;
});
const { default: next } = await import("next");

const app = next({ dev: false, dir, hostname: hostname ?? "localhost", port });
const handle = app.getRequestHandler();
// What Next's router does to every response it sends (next/dist/server/lib/router-server.js):
// gzip or deflate for a client that accepts it, from 1 KiB, Vary: Accept-Encoding; and on a
// client that went away, the zlib stream released (releaseCompressionStream).
const require = createRequire(import.meta.url);
const compress = require("next/dist/compiled/compression")();
const { releaseCompressionStream } = require("next/dist/server/lib/release-compression-stream");
await app.prepare(); // then instrumentation.ts runs: the database, the runners and the route table

/** The fast route table startServer published (server/transports/http/fast-routes.ts). */
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
    // The request's ID (the HTTP hook set it on the response), in the log and the envelope.
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

// Methods no route serves (TRACE, PROPFIND, …) and requests Node's parser refuses (431, control
// characters, unknown methods) are answered in the JSON envelope by the HTTP hook, which sees
// every server of the process, this one included (server/transports/http/methods.ts).

// SIGTERM and SIGINT belong to the app (server/boot/lifecycle.ts): it stops accepting connections on
// this server, lets sends, webhook attempts and requests under way finish (SHUTDOWN_GRACE_SECONDS),
// returns unfinished work to the queue and exits 0.

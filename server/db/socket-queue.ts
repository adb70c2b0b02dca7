import { chmod, mkdir, rm } from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import type { PGlite } from "@electric-sql/pglite";
import type { PGliteThread } from "./pglite-thread";

// PGlite has no authentication: Unix sockets in a 0700 directory only, never a TCP port any local
// user could reach. pglite-socket 0.1.x breaks with two clients at once, so a front socket hands
// connections to the inner one a time: a second CLI command waits instead of failing.

const SOCKET_PORT = 5432;
const SOCKET_FILE = `.s.PGSQL.${SOCKET_PORT}`;
const INNER_FILE = "pglite-inner.sock";
/** Linux's sun_path holds 107 bytes (macOS 103). */
const MAX_SOCKET_PATH = process.platform === "linux" ? 107 : 103;

export interface QueuedSocket {
  host: string;
  port: number;
  path: string;
  close(): Promise<void>;
}

export class SocketPathTooLongError extends Error {}

function listen(server: net.Server, file: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(file, () => {
      server.off("error", reject);
      resolve();
    });
  });
}

/** The caller must own the data directory's lock: socket files a crashed server left are replaced. */
export async function startQueuedSocket(db: PGlite | PGliteThread, dir: string): Promise<QueuedSocket> {
  const frontPath = path.join(dir, SOCKET_FILE);
  const innerPath = path.join(dir, INNER_FILE);
  if (Buffer.byteLength(frontPath) > MAX_SOCKET_PATH || Buffer.byteLength(innerPath) > MAX_SOCKET_PATH) {
    throw new SocketPathTooLongError(`The socket path ${frontPath} is longer than Unix sockets allow; use a shorter DATA_DIR.`);
  }
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
  await Promise.all([rm(frontPath, { force: true }), rm(innerPath, { force: true })]);

  const { PGLiteSocketServer } = await import("@electric-sql/pglite-socket");
  // The socket server is typed for PGlite's class; it uses waitReady, runExclusive, exec,
  // isInTransaction and execProtocolRawStream, which PGliteThread implements.
  const inner = new PGLiteSocketServer({ db: db as PGlite, path: innerPath });
  await inner.start();
  await chmod(innerPath, 0o600);

  const waiting: net.Socket[] = [];
  let active = false;
  const next = (): void => {
    if (active) return;
    const client = waiting.shift();
    if (!client) return;
    if (client.destroyed) return next();
    active = true;
    const upstream = net.connect(innerPath);
    let finished = false;
    const done = () => {
      if (finished) return;
      finished = true;
      client.destroy();
      upstream.destroy();
      // Let the PGlite socket server detach the old connection before the next one attaches.
      setTimeout(() => {
        active = false;
        next();
      }, 20);
    };
    client.on("close", done).on("error", done);
    upstream.on("close", done).on("error", done);
    client.pipe(upstream);
    upstream.pipe(client);
  };

  const front = net.createServer((socket) => {
    socket.pause(); // hold its bytes until its turn
    socket.on("error", () => socket.destroy());
    waiting.push(socket);
    next();
  });
  try {
    await listen(front, frontPath);
    await chmod(frontPath, 0o600);
  } catch (err) {
    await inner.stop();
    throw err;
  }
  return {
    host: dir,
    port: SOCKET_PORT,
    path: frontPath,
    async close() {
      await new Promise<void>((r) => front.close(() => r()));
      await inner.stop();
      await Promise.all([rm(frontPath, { force: true }), rm(innerPath, { force: true })]);
    },
  };
}

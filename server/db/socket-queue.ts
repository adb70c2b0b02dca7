import net from "node:net";
import type { PGlite } from "@electric-sql/pglite";
import type { PGliteThread } from "./pglite-thread";

// Serves the embedded PGlite over the PostgreSQL wire protocol on loopback, for the operator
// CLI. pglite-socket 0.1.x breaks when two clients are connected at once, so this front
// accepts every connection and hands them to it one at a time: a second CLI command waits
// for the first to finish instead of failing.

export interface QueuedSocket {
  host: string;
  port: number;
  close(): Promise<void>;
}

function listen(server: net.Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve((server.address() as net.AddressInfo).port));
  });
}

export async function startQueuedSocket(db: PGlite | PGliteThread, host = "127.0.0.1", port = 0): Promise<QueuedSocket> {
  const { PGLiteSocketServer } = await import("@electric-sql/pglite-socket");
  const probe = net.createServer();
  const innerPort = await listen(probe, "127.0.0.1", 0); // a free port for the inner server
  await new Promise<void>((r) => probe.close(() => r()));
  // The socket server is typed for PGlite's class; it uses waitReady, runExclusive, exec,
  // isInTransaction and execProtocolRawStream, which PGliteThread implements.
  const inner = new PGLiteSocketServer({ db: db as PGlite, host: "127.0.0.1", port: innerPort });
  await inner.start();

  const waiting: net.Socket[] = [];
  let active = false;
  const next = (): void => {
    if (active) return;
    const client = waiting.shift();
    if (!client) return;
    if (client.destroyed) return next();
    active = true;
    const upstream = net.connect(innerPort, "127.0.0.1");
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
  const actualPort = await listen(front, host, port);
  return {
    host,
    port: actualPort,
    async close() {
      await new Promise<void>((r) => front.close(() => r()));
      await inner.stop();
    },
  };
}

import http from "node:http";
import type { AddressInfo } from "node:net";

// What the scripted provider fakes and the provider clients' tests share: an HTTP server on a
// loopback port, closed with its open connections, a port where nothing listens, and the body
// of a request.

export interface Loopback {
  server: http.Server;
  /** http://127.0.0.1:<port>, no trailing slash. */
  url: string;
  /** Stops listening and drops the open connections (answers left hanging included). */
  close(): Promise<void>;
}

/** A server for `listener` on a free port of 127.0.0.1; when an async listener fails, its connection is dropped. */
export async function listenLoopback(listener?: (req: http.IncomingMessage, res: http.ServerResponse) => void | Promise<void>): Promise<Loopback> {
  const server = http.createServer((req, res) => {
    Promise.resolve(listener?.(req, res)).catch((err: unknown) => res.destroy(err instanceof Error ? err : new Error(String(err))));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    server,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The origin of a loopback port that was free a moment ago: a connection there is refused. */
export async function refusedUrl(): Promise<string> {
  const spare = await listenLoopback();
  await spare.close();
  return spare.url;
}

/** The whole body of a request. */
export async function readBody(req: http.IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

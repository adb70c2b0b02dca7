import { rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { config } from "./config";
import { startChangeListener } from "./cache/changes";
import { database } from "./db";
import { startQueuedSocket } from "./db/socket-queue";
import { sandboxLine } from "./services/lines";
import { loadSigningSecret } from "./storage/signed-urls";

// Server start: open (and migrate) the database, make sure the sandbox line and the signing
// secret exist, and on embedded PGlite open a loopback socket so the operator CLI can reach
// the same database while the server runs.

export const SERVER_INFO_FILE = "server.json";

export interface ServerInfo {
  pid: number;
  pgliteSocket: { host: string; port: number };
}

export async function bootstrap(): Promise<void> {
  const db = await database();
  await sandboxLine();
  await loadSigningSecret();
  await startChangeListener();
  const c = config();
  if (db.kind === "pglite" && db.pglite && c.dataDir) {
    const socket = await startQueuedSocket(db.pglite, "127.0.0.1", c.PGLITE_SOCKET_PORT);
    const info: ServerInfo = { pid: process.pid, pgliteSocket: { host: socket.host, port: socket.port } };
    const file = path.join(c.dataDir, SERVER_INFO_FILE);
    await writeFile(file, JSON.stringify(info));
    const cleanup = () => {
      void rm(file, { force: true });
    };
    process.once("exit", cleanup);
  }
}

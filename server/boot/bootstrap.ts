import { rmSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { config } from "../kernel/config";
import { startChangeListener } from "../cache/changes";
import { database } from "../db";
import { SocketPathTooLongError, startQueuedSocket } from "../db/socket-queue";
import { sandboxLine } from "../services/lines/sandbox-line";
import { loadSigningSecret } from "../storage/signed-urls";
import { log } from "../observability/log";

// Server start: open (and migrate) the database, make sure the sandbox line and the signing
// secret exist, and on embedded PGlite open a Unix socket (DATA_DIR/run, this OS user only)
// so the operator CLI can reach the same database while the server runs.

const SERVER_INFO_FILE = "server.json";
/** Holds the PGlite sockets; mode 0700. */
const SOCKET_DIR = "run";

interface ServerInfo {
  pid: number;
  /** A Unix socket: `host` is its directory (as for libpq and node-postgres), `port` names the file. */
  pgliteSocket: { host: string; port: number };
  /** The server's PUBLIC_URL: the operator CLI shows inbound URLs with it, not with its own guess. */
  publicUrl?: string;
}

export async function bootstrap(): Promise<void> {
  const db = await database();
  await sandboxLine();
  await loadSigningSecret();
  await startChangeListener();
  const c = config();
  if (db.kind === "pglite" && db.pglite && c.dataDir) {
    let socket: Awaited<ReturnType<typeof startQueuedSocket>>;
    try {
      socket = await startQueuedSocket(db.pglite, path.join(/*turbopackIgnore: true*/ c.dataDir, SOCKET_DIR));
    } catch (err) {
      if (!(err instanceof SocketPathTooLongError)) throw err;
      log().warn({ reason: err.message }, "the operator CLI cannot reach this server's database while it runs");
      return;
    }
    const info: ServerInfo = { pid: process.pid, pgliteSocket: { host: socket.host, port: socket.port }, publicUrl: c.PUBLIC_URL };
    const file = path.join(/*turbopackIgnore: true*/ c.dataDir, SERVER_INFO_FILE);
    await writeFile(file, JSON.stringify(info), { mode: 0o600 });
    const cleanup = () => {
      rmSync(file, { force: true });
    };
    process.once("exit", cleanup);
  }
}

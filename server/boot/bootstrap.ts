import { readFileSync, rmSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { config } from "../kernel/config";
import { startChangeListener } from "../cache/changes";
import { database } from "../db";
import { secureDataDir } from "../db/data-dir";
import { SocketPathTooLongError, startQueuedSocket } from "../db/socket-queue";
import { sandboxLine } from "../services/lines/sandbox-line";
import { loadSigningSecret } from "../storage/signed-urls";
import { log } from "../kernel/log";
import { SERVER_INFO_FILE, type ServerInfo, servedDatabase } from "./server-info";

// Server start: the database opened and migrated, the sandbox line and signing secret, and for
// the operator CLI a Unix socket to embedded PGlite (this OS user only) and the marker.

const SOCKET_DIR = "run";

/** The embedded database's socket for the operator CLI, or undefined when its path is too long for a Unix socket. */
async function openSocket(pglite: Parameters<typeof startQueuedSocket>[0], dataDir: string): Promise<ServerInfo["pgliteSocket"]> {
  try {
    const socket = await startQueuedSocket(pglite, path.join(/*turbopackIgnore: true*/ dataDir, SOCKET_DIR));
    return { host: socket.host, port: socket.port };
  } catch (err) {
    if (!(err instanceof SocketPathTooLongError)) throw err;
    log().warn({ reason: err.message }, "the operator CLI cannot reach this server's database while it runs");
    return undefined;
  }
}

export async function bootstrap(): Promise<void> {
  const db = await database();
  await sandboxLine();
  await loadSigningSecret();
  await startChangeListener();
  const c = config();
  if (!c.dataDir) return;
  let pgliteSocket: ServerInfo["pgliteSocket"];
  if (db.kind === "pglite" && db.pglite) {
    pgliteSocket = await openSocket(db.pglite, c.dataDir);
    if (!pgliteSocket) return;
  }
  const info: ServerInfo = { pid: process.pid, database: servedDatabase(c), pgliteSocket, publicUrl: c.PUBLIC_URL, nodeEnv: c.NODE_ENV };
  const file = path.join(/*turbopackIgnore: true*/ c.dataDir, SERVER_INFO_FILE);
  try {
    // On PostgreSQL DATA_DIR may not exist yet (files in S3, CREDENTIALS_KEY set).
    secureDataDir(c.dataDir);
    await writeFile(file, JSON.stringify(info), { mode: 0o600 });
  } catch (err) {
    log().warn({ err, file }, "could not write the marker that tells the operator CLI which database this server serves");
    return;
  }
  process.once("exit", () => {
    // Instances on one DATA_DIR overwrite each other's marker: only the last writer removes it.
    try {
      if ((JSON.parse(readFileSync(file, "utf8")) as ServerInfo).pid === process.pid) rmSync(file, { force: true });
    } catch {} // gone already
  });
}

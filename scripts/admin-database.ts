// On embedded PGlite the CLI reaches a running server's database through the Unix socket it opened in DATA_DIR/run (only
// the server's OS user may connect), or opens DATA_DIR itself when no server runs. It refuses another kind of database
// than the server's (DATA_DIR/server.json) and takes its PUBLIC_URL.
import net from "node:net";
import path from "node:path";
import { postgresLocation, runningServerInfo, SERVER_INFO_FILE, type ServerInfo } from "../server/boot/server-info";
import { config, resetConfig } from "../server/kernel/config";
import { markPublicUrlGuessed } from "../server/kernel/public-url";
import { ENV_FILES } from "./admin-env";

function canConnect(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ path: path.join(host, `.s.PGSQL.${port}`) });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}

async function socketUrl(info: ServerInfo | null): Promise<string | null> {
  if (!info?.pgliteSocket) return null;
  const { host, port } = info.pgliteSocket;
  // Servers before the Unix socket wrote a TCP host; the CLI then opens DATA_DIR itself (and
  // is told the directory is in use).
  if (typeof host !== "string" || !path.isAbsolute(host) || !Number.isInteger(port)) return null;
  if (!(await canConnect(host, port))) return null;
  return `postgresql://postgres@localhost:${port}/postgres?host=${encodeURIComponent(host)}`;
}

export async function runningServerUrl(): Promise<string | null> {
  const { dataDir } = config();
  return dataDir ? socketUrl(runningServerInfo(dataDir)) : null;
}

function shown(dir: string): string {
  const relative = path.relative(process.cwd(), dir);
  return relative && !relative.startsWith("..") && !path.isAbsolute(relative) ? `./${relative}` : dir;
}

function describe(kind: "pglite" | "postgresql", dataDir: string | null, at: string): string {
  if (kind === "postgresql") return `PostgreSQL at ${at}, data directory ${dataDir ? shown(dataDir) : ":memory:"}`;
  return dataDir ? `the embedded database in ${shown(dataDir)}` : "an in-memory embedded database (DATA_DIR=:memory:, nothing is kept)";
}

/** It would write where the server never reads, with another credentials key. */
export async function useServersDatabase(options: { write: boolean }): Promise<void> {
  const c = config();
  const kind = c.DATABASE_URL ? "postgresql" : "pglite";
  const at = c.DATABASE_URL ? postgresLocation(c.DATABASE_URL, c.DATABASE_SCHEMA) : "";
  const server = c.dataDir ? runningServerInfo(c.dataDir) : null;
  const served = server?.database;
  if (server && served && served.kind !== kind) {
    const theirs = served.kind === "postgresql" ? `PostgreSQL at ${served.at}` : `the embedded database in ${shown(c.dataDir!)}`;
    const fix =
      served.kind === "postgresql"
        ? "give the CLI the server's DATABASE_URL (and the rest of its settings): in the environment, or in a .env file in this folder, which the server reads too"
        : "run the CLI without DATABASE_URL, as the server runs";
    throw new Error(
      `a server (pid ${server.pid}${server.nodeEnv ? `, NODE_ENV=${server.nodeEnv}` : ""}) runs on DATA_DIR ${shown(c.dataDir!)} with ${theirs}, but this command would use ${describe(kind, c.dataDir, at)}: ${fix}. (No such server? Then ${path.join(shown(c.dataDir!), SERVER_INFO_FILE)} is left from one that was killed: delete it.)`,
    );
  }
  // The inbound URLs this CLI prints are the running server's, not built from this shell's PUBLIC_URL.
  if (server?.publicUrl) process.env.PUBLIC_URL = server.publicUrl;
  else if (!process.env.PUBLIC_URL) markPublicUrlGuessed();
  let through = "";
  const url = kind === "pglite" ? await socketUrl(server) : null;
  if (url) {
    process.env.DATABASE_URL = url;
    process.env.DATABASE_POOL_SIZE = "1";
    through = ` (through the server running on it, pid ${server!.pid})`;
  }
  resetConfig();
  if (options.write) {
    const files = ENV_FILES.length ? `; settings from the environment and ${ENV_FILES.join(", ")}` : "";
    console.error(`using ${describe(kind, c.dataDir, at)}${through}${files}`);
  }
}

import { readFileSync } from "node:fs";
import path from "node:path";
import type { Config } from "../kernel/config";

// DATA_DIR/server.json, the running server's marker for the operator CLI (docs/operator-cli.md).

export const SERVER_INFO_FILE = "server.json";

export type ServedDatabase = { kind: "pglite" } | { kind: "postgresql"; at: string };

export interface ServerInfo {
  pid: number;
  /** Absent in files of older servers, which wrote it on embedded PGlite only. */
  database?: ServedDatabase;
  /** A Unix socket: `host` is its directory (as for libpq and node-postgres), `port` names the file. */
  pgliteSocket?: { host: string; port: number };
  publicUrl?: string;
  nodeEnv?: string;
}

/** A PostgreSQL URL as `host:port/database` (a Unix socket's directory for the host), never its password. */
export function postgresLocation(url: string, schema = "public"): string {
  // node-postgres also takes forms URL does not parse (postgresql://user@/db?host=/run/postgresql).
  if (!URL.canParse(url)) {
    const [where = "", query = ""] = url.replace(/^[a-z]+:\/\/([^/]*@)?/, "").split("?");
    const socket = new URLSearchParams(query).get("host");
    return `${where}${socket ? ` on ${socket}` : ""}`;
  }
  const u = new URL(url);
  const host = u.hostname || u.searchParams.get("host") || "localhost";
  const database = decodeURIComponent(u.pathname.replace(/^\//, "")) || "(default database)";
  return `${host}${u.port ? `:${u.port}` : ""}/${database}${schema !== "public" ? ` (schema ${schema})` : ""}`;
}

export function maskedPostgresUrl(url: string): string {
  return url.replace(/^([a-z]+:\/\/[^:@/]*:)[^/]*@/, "$1****@").replace(/([?&]password=)[^&]*/i, "$1****");
}

export function servedDatabase(c: Config): ServedDatabase {
  return c.DATABASE_URL ? { kind: "postgresql", at: postgresLocation(c.DATABASE_URL, c.DATABASE_SCHEMA) } : { kind: "pglite" };
}

/** Whether process `pid` exists (a marker whose server died stays behind after kill -9). */
function alive(pid: unknown): boolean {
  if (typeof pid !== "number" || !Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM"; // it exists, under another user
  }
}

export function runningServerInfo(dataDir: string): ServerInfo | null {
  let info: ServerInfo;
  try {
    info = JSON.parse(readFileSync(path.join(/*turbopackIgnore: true*/ dataDir, SERVER_INFO_FILE), "utf8")) as ServerInfo;
  } catch {
    return null;
  }
  if (!info || typeof info !== "object" || !alive(info.pid)) return null;
  return { ...info, database: info.database ?? { kind: "pglite" } };
}

import { randomBytes } from "node:crypto";
import { createWriteStream, existsSync } from "node:fs";
import { readFile, rename, rm, stat } from "node:fs/promises";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { createGzip } from "node:zlib";
import { PGlite } from "@electric-sql/pglite";
import pg from "pg";
import { z } from "zod";
import { CREDENTIALS_KEY_FILE } from "../db/credentials";
import { storage } from "../storage";
import { ARCHIVE_END, archiveEntry, type EntryDigest } from "./archive";
import { DataDirBusyError, lockDataDir } from "../db/dir-lock";

// docs/production.md, "Backups". Files are copied after the snapshot: a blob is written before its
// File row and deleted only when no row points at it, so every row in the snapshot has its bytes.

export const BACKUP_FORMAT = "relay-backup";
export const BACKUP_FORMAT_VERSION = 1;
export const MANIFEST_ENTRY = "manifest.json";
export const CREDENTIALS_ENTRY = CREDENTIALS_KEY_FILE;
const FETCH_ROWS = 500;
const PART_BYTES = 1 << 20;
const CURSOR_PREFIX = "relay_backup_";

const sha256Hex = z.string().regex(/^[0-9a-f]{64}$/);

export const BackupManifestSchema = z.object({
  format: z.literal(BACKUP_FORMAT),
  format_version: z.literal(BACKUP_FORMAT_VERSION),
  app_version: z.string(),
  created_at: z.string(),
  database: z.object({
    engine: z.literal("pglite"),
    migration: z.string().nullable(),
    migrations: z.array(z.string()),
    tables: z.record(z.string(), z.object({ rows: z.number().int().min(0), parts: z.array(z.string()) })),
    sequences: z.record(z.string(), z.object({ last_value: z.string().regex(/^-?\d+$/), is_called: z.boolean() })),
  }),
  files: z.object({
    count: z.number().int().min(0),
    bytes: z.number().int().min(0),
    /** File rows whose bytes were already missing from file storage when the backup was made. */
    missing: z.array(z.string()),
  }),
  credentials_key: z.boolean(),
  entries: z.record(z.string(), z.object({ size: z.number().int().min(0), sha256: sha256Hex })),
});
export type BackupManifest = z.infer<typeof BackupManifestSchema>;

/** Entry names: db/<table>/<part>.ndjson, files/<storage key>, credentials.key. */
const TABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
export const PART_ENTRY = /^db\/([A-Za-z_][A-Za-z0-9_]*)\/\d{6}\.ndjson$/;
export const FILE_ENTRY = /^files\/([A-Za-z0-9_./-]+)$/;
export const isSafeStorageKey = (key: string) => /^[A-Za-z0-9_./-]+$/.test(key) && !key.split("/").includes("..") && !key.startsWith("/");

export const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`;
const quoteLiteral = (text: string) => `'${text.replaceAll("'", "''")}'`;

export const RELATIONS_SQL = (kind: "r" | "S") => `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE n.nspname = current_schema() AND c.relkind = '${kind}' ORDER BY c.relname`;

interface MigrationRow {
  migration_name: string;
  finished_at: string | null;
  rolled_back_at: string | null;
}

function appliedMigrations(rows: MigrationRow[]): string[] {
  return rows.filter((r) => r.finished_at && !r.rolled_back_at).map((r) => r.migration_name).sort();
}

export const fileStamp = (at = new Date()) => at.toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");

interface SnapshotSource {
  query<T>(text: string): Promise<T[]>;
  close(): Promise<void>;
}

function once(fn: () => Promise<void>): () => Promise<void> {
  let done: Promise<void> | undefined;
  return () => (done ??= fn());
}

async function serverSource(url: string): Promise<SnapshotSource> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return {
    query: async <T>(text: string) => (await client.query(text)).rows as T[],
    close: once(() => client.end()),
  };
}

async function directSource(dataDir: string): Promise<SnapshotSource> {
  const dir = path.join(dataDir, "pglite");
  if (!existsSync(path.join(dir, "PG_VERSION"))) throw new Error(`There is no embedded database in ${dataDir} to back up.`);
  let unlock: () => void;
  try {
    unlock = lockDataDir(dataDir);
  } catch (err) {
    if (!(err instanceof DataDirBusyError)) throw err;
    throw new Error(`The embedded database in ${dataDir} is open in another process that serves no socket to reach it through; try again once it has stopped.`);
  }
  try {
    const db = await PGlite.create(dir);
    return {
      query: async <T>(text: string) => (await db.query<T>(text)).rows,
      close: once(async () => {
        try {
          await db.close();
        } finally {
          unlock();
        }
      }),
    };
  } catch (err) {
    unlock();
    throw err;
  }
}

interface FileRow {
  id: string;
  storageKey: string;
  sha256: string;
}

export interface BackupOptions {
  dataDir: string;
  out: string;
  /** A running server's database socket (postgresql://…?host=…), or null to open DATA_DIR here. */
  serverUrl: string | null;
  appVersion: string;
  force?: boolean;
}

export interface BackupResult {
  manifest: BackupManifest;
  bytes: number;
  /** Files whose bytes differ from their File row's sha256 (damaged on disk before the backup). */
  mismatched: string[];
}

export async function createBackup(options: BackupOptions): Promise<BackupResult> {
  const out = path.resolve(options.out);
  if (!options.force && existsSync(out)) throw new Error(`${out} exists; choose another name, or pass --force to replace it.`);
  if (!existsSync(path.dirname(out))) throw new Error(`Cannot write ${out}: the directory ${path.dirname(out)} does not exist.`);
  const source = options.serverUrl ? await serverSource(options.serverUrl) : await directSource(options.dataDir);
  const partial = `${out}.${randomBytes(4).toString("hex")}.partial`;
  const mismatched: string[] = [];
  let manifest: BackupManifest | undefined;
  try {
    await pipeline(
      backupStream(source, options, mismatched, (m) => (manifest = m)),
      createGzip(),
      createWriteStream(partial, { flags: "wx", mode: 0o600 }),
    );
    await rename(partial, out);
  } catch (err) {
    await rm(partial, { force: true });
    throw err;
  } finally {
    await source.close().catch(() => undefined); // already closed unless the backup failed early
  }
  return { manifest: manifest!, bytes: (await stat(out)).size, mismatched };
}

async function* backupStream(
  source: SnapshotSource,
  options: BackupOptions,
  mismatched: string[],
  done: (manifest: BackupManifest) => void,
): AsyncGenerator<Uint8Array> {
  const entries: Record<string, EntryDigest> = {};
  const record = (name: string) => (digest: EntryDigest) => (entries[name] = digest);
  const createdAt = new Date().toISOString();

  const tables = (await source.query<{ name: string }>(RELATIONS_SQL("r"))).map((r) => r.name);
  if (!tables.length) throw new Error(`The embedded database in ${options.dataDir} has no tables to back up.`);
  const unsafe = tables.find((t) => !TABLE_NAME.test(t));
  if (unsafe) throw new Error(`Table ${unsafe} has a name backups do not support.`);
  // A backup that crashed leaves its held cursor in the server's session; only one CLI
  // connection is served at a time, so any found now is such a leftover.
  for (const { name } of await source.query<{ name: string }>(`SELECT name FROM pg_cursors WHERE name LIKE '${CURSOR_PREFIX}%'`)) {
    await source.query(`CLOSE ${quoteIdent(name)}`);
  }
  const cursor = `${CURSOR_PREFIX}${randomBytes(6).toString("hex")}`;
  // Generated columns (Message.textSearch) are not data: the database computes them again on restore.
  const generated = new Map<string, string[]>();
  for (const c of await source.query<{ t: string; c: string }>(
    `SELECT table_name AS t, column_name AS c FROM information_schema.columns WHERE table_schema = current_schema() AND is_generated <> 'NEVER'`,
  )) {
    generated.set(c.t, [...(generated.get(c.t) ?? []), c.c]);
  }
  const rowOf = (t: string) => (generated.has(t) ? `(to_jsonb(x) - ARRAY[${generated.get(t)!.map(quoteLiteral).join(", ")}]::text[])` : "to_jsonb(x)");
  const selects = tables.map((t) => `SELECT ${quoteLiteral(t)} AS t, ${rowOf(t)}::text AS r FROM ${quoteIdent(t)} x`);
  await source.query(`DECLARE ${quoteIdent(cursor)} NO SCROLL CURSOR WITH HOLD FOR ${selects.join(" UNION ALL ")}`);

  // Read after the snapshot: sequences are not transactional, so these values are at least
  // those the snapshot's rows used.
  const sequences: BackupManifest["database"]["sequences"] = {};
  for (const { name } of await source.query<{ name: string }>(RELATIONS_SQL("S"))) {
    const [row] = await source.query<{ last_value: string; is_called: boolean }>(`SELECT last_value::text AS last_value, is_called FROM ${quoteIdent(name)}`);
    if (row) sequences[name] = row;
  }

  const counts = new Map(tables.map((t) => [t, { rows: 0, parts: [] as string[], pending: [] as string[], bytes: 0 }]));
  const files: FileRow[] = [];
  const migrationRows: MigrationRow[] = [];
  const emit = async function* (table: string) {
    const t = counts.get(table)!;
    if (!t.pending.length) return;
    const name = `db/${table}/${String(t.parts.length + 1).padStart(6, "0")}.ndjson`;
    const body = Buffer.from(`${t.pending.join("\n")}\n`);
    t.parts.push(name);
    t.pending = [];
    t.bytes = 0;
    yield* archiveEntry(name, body.length, body, record(name));
  };
  try {
    for (;;) {
      const batch = await source.query<{ t: string; r: string }>(`FETCH FORWARD ${FETCH_ROWS} FROM ${quoteIdent(cursor)}`);
      for (const { t, r } of batch) {
        const table = counts.get(t)!;
        table.rows++;
        table.pending.push(r);
        table.bytes += r.length + 1;
        if (t === "File") files.push(JSON.parse(r) as FileRow);
        if (t === "_prisma_migrations") migrationRows.push(JSON.parse(r) as MigrationRow);
        if (table.bytes >= PART_BYTES) yield* emit(t);
      }
      if (batch.length < FETCH_ROWS) break;
    }
  } finally {
    // Held cursors outlive the connection: close it even when the backup fails.
    await source.query(`CLOSE ${quoteIdent(cursor)}`).catch(() => undefined);
  }
  await source.close(); // the socket serves one CLI at a time: free it before copying files
  for (const t of tables) yield* emit(t);

  const store = storage();
  const missing: string[] = [];
  let fileBytes = 0;
  const keys = new Set<string>();
  for (const file of files.sort((a, b) => a.storageKey.localeCompare(b.storageKey))) {
    if (keys.has(file.storageKey)) continue;
    keys.add(file.storageKey);
    if (!isSafeStorageKey(file.storageKey)) throw new Error(`File ${file.id} has a storage key backups do not support: ${file.storageKey}`);
    const blob = await store.open(file.storageKey);
    if (!blob) {
      missing.push(file.id);
      continue;
    }
    const name = `files/${file.storageKey}`;
    try {
      yield* archiveEntry(name, blob.size, blob.stream, (digest) => {
        entries[name] = digest;
        if (digest.sha256 !== file.sha256) mismatched.push(file.id);
      });
    } finally {
      blob.stream.destroy();
    }
    fileBytes += blob.size;
  }

  let credentials: Buffer | null = null;
  try {
    credentials = await readFile(path.join(options.dataDir, CREDENTIALS_KEY_FILE));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  if (credentials) yield* archiveEntry(CREDENTIALS_ENTRY, credentials.length, credentials, record(CREDENTIALS_ENTRY));

  const migrations = appliedMigrations(migrationRows);
  const manifest: BackupManifest = {
    format: BACKUP_FORMAT,
    format_version: BACKUP_FORMAT_VERSION,
    app_version: options.appVersion,
    created_at: createdAt,
    database: {
      engine: "pglite",
      migration: migrations.at(-1) ?? null,
      migrations,
      tables: Object.fromEntries(tables.map((t) => [t, { rows: counts.get(t)!.rows, parts: counts.get(t)!.parts }])),
      sequences,
    },
    files: { count: keys.size - missing.length, bytes: fileBytes, missing },
    credentials_key: credentials !== null,
    entries,
  };
  const body = Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`);
  yield* archiveEntry(MANIFEST_ENTRY, body.length, body, () => undefined);
  yield ARCHIVE_END;
  done(manifest);
}

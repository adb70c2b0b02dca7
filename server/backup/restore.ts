import { randomBytes } from "node:crypto";
import { createReadStream, existsSync, readFileSync } from "node:fs";
import { type FileHandle, mkdir, open, readdir, readFile, rename, rm, rmdir, stat } from "node:fs/promises";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { fileURLToPath } from "node:url";
import { createGunzip } from "node:zlib";
import { PGlite } from "@electric-sql/pglite";
import { z } from "zod";
import { storage } from "../storage";
import { ArchiveError, type EntryDigest, type EntrySink, readArchive } from "./archive";
import {
  BACKUP_FORMAT,
  BACKUP_FORMAT_VERSION,
  type BackupManifest,
  BackupManifestSchema,
  CREDENTIALS_ENTRY,
  FILE_ENTRY,
  fileStamp,
  isSafeStorageKey,
  MANIFEST_ENTRY,
  PART_ENTRY,
  quoteIdent,
  RELATIONS_SQL,
} from "./backup";
import { DataDirBusyError, lockDataDir } from "../db/dir-lock";
import { applyMigrations, readMigrations } from "../db/migrations";
import { pgliteRunner } from "../db/runners";

// docs/production.md, "Backups": everything is built and checked beside the data, so a corrupt or
// cut-short backup changes nothing. The DATA_DIR lock is held throughout: no server starts meanwhile.

const LOCK_FILE = "pglite.lock"; // dir-lock.ts
const STAGING_PREFIX = ".restore-";
const DUMP_DIR = "dump";
const INSERT_ROWS = 500;
const MAX_MANIFEST_BYTES = 256 * 1024 * 1024;

export interface RestoreOptions {
  dataDir: string;
  from: string;
  force: boolean;
}

export interface RestoreResult {
  manifest: BackupManifest;
  rows: number;
  movedAside: string | null;
}

export async function restoreBackup(options: RestoreOptions): Promise<RestoreResult> {
  const { dataDir } = options;
  const from = path.resolve(options.from);
  const file = await stat(from).catch((err: NodeJS.ErrnoException) => {
    throw new Error(`Cannot read ${from}: ${err.code === "ENOENT" ? "no such file" : err.message}.`);
  });
  if (!file.isFile()) throw new Error(`Cannot read ${from}: not a file.`);

  const created = !existsSync(dataDir);
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  let unlock: () => void;
  try {
    unlock = lockDataDir(dataDir);
  } catch (err) {
    if (!(err instanceof DataDirBusyError)) throw err;
    let owner = "";
    try {
      owner = ` ${readFileSync(path.join(dataDir, LOCK_FILE), "utf8").trim()}`;
    } catch {
      // it just exited
    }
    throw new Error(`The database in ${dataDir} is in use by process${owner} (a running server, or another admin command): stop it before restoring.`);
  }
  const stamp = fileStamp();
  const staging = path.join(dataDir, `${STAGING_PREFIX}${stamp}-${randomBytes(3).toString("hex")}`);
  try {
    for (const name of await readdir(dataDir)) {
      if (name.startsWith(STAGING_PREFIX)) await rm(path.join(dataDir, name), { recursive: true, force: true }); // a killed restore's
    }
    const existing = (await readdir(dataDir)).filter((name) => name !== LOCK_FILE);
    if (existing.length && !options.force) {
      const what = existing.includes("pglite") ? "a database" : "data";
      throw new Error(`${dataDir} already holds ${what}; pass --force to move it aside to ${dataDir}.before-restore-<time> and restore.`);
    }
    await mkdir(staging, { mode: 0o700 });
    const manifest = await unpack(from, staging);
    const rows = await loadDatabase(manifest, staging);
    await rm(path.join(staging, DUMP_DIR), { recursive: true, force: true });
    const elsewhere = filesGoElsewhere(dataDir);

    const aside = existing.length ? `${dataDir}.before-restore-${stamp}` : null;
    if (aside) {
      await mkdir(aside, { mode: 0o700 });
      await moveAll(dataDir, aside, existing).catch(async (err: Error) => {
        await rmdir(aside).catch(() => undefined);
        throw new Error(`Could not move the old data to ${aside} (${err.message}); nothing was changed. Move it away yourself and restore without --force.`);
      });
    }
    const restored = (await readdir(staging)).filter((name) => !(elsewhere && name === "files"));
    await moveAll(staging, dataDir, restored).catch(async (err: Error) => {
      if (aside) await moveAll(aside, dataDir, existing);
      throw err;
    });
    if (elsewhere) {
      await putFiles(manifest, staging).catch((err: Error) => {
        throw new Error(`The database is restored in ${dataDir}, but copying the files to STORAGE_URL failed (${err.message}); run the restore again with --force once the store answers.`);
      });
    }
    return { manifest, rows, movedAside: aside };
  } finally {
    await rm(staging, { recursive: true, force: true });
    unlock();
    if (created) await rmdir(dataDir).catch(() => undefined); // left only if it stayed empty
  }
}

function filesGoElsewhere(dataDir: string): boolean {
  const url = process.env.STORAGE_URL?.trim();
  if (!url) return false;
  return !(URL.canParse(url) && new URL(url).protocol === "file:" && path.resolve(fileURLToPath(url)) === path.join(dataDir, "files"));
}

/** Keys are written once, so a key already in the store holds these bytes and is left alone. */
async function putFiles(manifest: BackupManifest, staging: string): Promise<void> {
  const store = storage();
  for (const name of Object.keys(manifest.entries)) {
    const key = FILE_ENTRY.exec(name)?.[1];
    if (key === undefined) continue;
    const there = await store.open(key);
    there?.stream.destroy();
    if (there?.size !== manifest.entries[name]!.size) await store.put(key, createReadStream(path.join(staging, "files", key)));
  }
}

async function moveAll(from: string, to: string, names: string[]): Promise<void> {
  const moved: string[] = [];
  try {
    for (const name of names) {
      await rename(path.join(from, name), path.join(to, name));
      moved.push(name);
    }
  } catch (err) {
    for (const name of moved.reverse()) await rename(path.join(to, name), path.join(from, name)).catch(() => undefined);
    throw err;
  }
}

/** Where an entry is unpacked in the staging directory; throws for names a backup never has. */
function entryPath(staging: string, name: string): string {
  if (PART_ENTRY.test(name)) return path.join(staging, DUMP_DIR, name);
  const key = FILE_ENTRY.exec(name)?.[1];
  if (key !== undefined && isSafeStorageKey(key)) return path.join(staging, "files", key);
  if (name === CREDENTIALS_ENTRY) return path.join(staging, CREDENTIALS_ENTRY);
  throw new ArchiveError(`it holds ${JSON.stringify(name)}, which no Relay backup has`);
}

async function unpack(from: string, staging: string): Promise<BackupManifest> {
  const seen = new Map<string, EntryDigest>();
  let manifestText: string | null = null;
  let current: FileHandle | null = null;
  const sink = async (name: string, size: number): Promise<EntrySink> => {
    if (seen.has(name) || (name === MANIFEST_ENTRY && manifestText !== null)) throw new ArchiveError(`it holds ${name} twice`);
    if (name === MANIFEST_ENTRY) {
      if (size > MAX_MANIFEST_BYTES) throw new ArchiveError("its manifest is implausibly large");
      const chunks: Buffer[] = [];
      return {
        write: async (chunk) => void chunks.push(Buffer.from(chunk)),
        end: async () => void (manifestText = Buffer.concat(chunks).toString("utf8")),
      };
    }
    const target = entryPath(staging, name);
    await mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
    const handle = await open(target, "wx", 0o600);
    current = handle;
    return {
      write: async (chunk) => void (await handle.write(chunk)),
      async end(digest) {
        current = null;
        await handle.close();
        seen.set(name, digest);
      },
    };
  };
  const unreadable = (reason: string) => new Error(`${from} is not a readable Relay backup: ${reason}. Nothing was changed.`);
  try {
    await pipeline(createReadStream(from), createGunzip(), (chunks: AsyncIterable<Buffer>) => readArchive(chunks, sink));
  } catch (err) {
    await (current as FileHandle | null)?.close().catch(() => undefined);
    const e = err as NodeJS.ErrnoException;
    if (e instanceof ArchiveError) throw unreadable(e.message);
    if (e.code?.startsWith("Z_") || e.code === "ERR_STREAM_PREMATURE_CLOSE") throw unreadable(`not gzip data, damaged or truncated (${e.message})`);
    throw err;
  }
  if (manifestText === null) throw unreadable(`it has no ${MANIFEST_ENTRY}`);
  let raw: unknown;
  try {
    raw = JSON.parse(manifestText);
  } catch {
    throw unreadable(`its ${MANIFEST_ENTRY} is not JSON`);
  }
  const head = z.object({ format: z.literal(BACKUP_FORMAT), format_version: z.number() }).safeParse(raw);
  if (!head.success) throw unreadable(`its ${MANIFEST_ENTRY} is not a Relay backup manifest`);
  if (head.data.format_version > BACKUP_FORMAT_VERSION) {
    throw new Error(`${from} is in backup format ${head.data.format_version}, made by a newer Relay; this version reads format ${BACKUP_FORMAT_VERSION}.`);
  }
  const parsed = BackupManifestSchema.safeParse(raw);
  if (!parsed.success) throw unreadable(`its ${MANIFEST_ENTRY} is not valid (${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")})`);
  const manifest = parsed.data;
  for (const [name, expected] of Object.entries(manifest.entries)) {
    const got = seen.get(name);
    if (!got) throw unreadable(`${name} is missing`);
    if (got.size !== expected.size || got.sha256 !== expected.sha256) throw unreadable(`${name} is damaged (its sha256 differs from the manifest's)`);
  }
  const extra = [...seen.keys()].find((name) => !(name in manifest.entries));
  if (extra) throw unreadable(`${extra} is not in its manifest`);
  const parts = Object.values(manifest.database.tables).flatMap((t) => t.parts);
  const unlisted = parts.find((part) => !(part in manifest.entries));
  if (unlisted) throw unreadable(`${unlisted} is not in its manifest`);
  if (manifest.credentials_key !== (CREDENTIALS_ENTRY in manifest.entries)) throw unreadable("its manifest disagrees about credentials.key");
  return manifest;
}

async function loadDatabase(manifest: BackupManifest, staging: string): Promise<number> {
  const known = await readMigrations();
  const unknown = manifest.database.migrations.filter((name) => !known.some((m) => m.name === name));
  if (unknown.length) {
    throw new Error(
      `The backup's schema is newer than this version of Relay (migration ${unknown.join(", ")} is unknown here); restore it with Relay ${manifest.app_version} or newer.`,
    );
  }
  const db = await PGlite.create(path.join(staging, "pglite"));
  try {
    await applyMigrations(pgliteRunner(db), known.filter((m) => manifest.database.migrations.includes(m.name)));
    const tables = (await db.query<{ name: string }>(RELATIONS_SQL("r"))).rows.map((r) => r.name);
    const absent = Object.keys(manifest.database.tables).find((t) => !tables.includes(t));
    if (absent) throw new Error(`The backup has table ${absent}, which its own migrations do not create here; it cannot be restored.`);
    let total = 0;
    // One transaction; foreign keys are not checked while loading (the rows come from one
    // consistent snapshot), so tables load in any order, as pg_restore --disable-triggers does.
    await db.transaction(async (tx) => {
      await tx.exec("SET LOCAL session_replication_role = replica");
      await tx.exec(`TRUNCATE ${tables.map(quoteIdent).join(", ")}`);
      for (const [table, { rows, parts }] of Object.entries(manifest.database.tables)) {
        const columns = (
          await tx.query<{ name: string }>(
            `SELECT column_name AS name FROM information_schema.columns
             WHERE table_schema = current_schema() AND table_name = $1 AND is_generated = 'NEVER' ORDER BY ordinal_position`,
            [table],
          )
        ).rows.map((c) => c.name);
        const list = columns.map(quoteIdent).join(", ");
        const insert = `INSERT INTO ${quoteIdent(table)} (${list}) OVERRIDING SYSTEM VALUE SELECT ${list} FROM jsonb_populate_recordset(NULL::${quoteIdent(table)}, $1::jsonb)`;
        let count = 0;
        for (const part of parts) {
          const lines = (await readFile(path.join(staging, DUMP_DIR, part), "utf8")).split("\n").filter(Boolean);
          if (count === 0 && lines[0]) {
            const keys = Object.keys(JSON.parse(lines[0]) as object).sort();
            if (keys.join() !== [...columns].sort().join()) throw new Error(`The backup's ${table} rows have columns (${keys.join(", ")}) that differ from the table's here.`);
          }
          for (let i = 0; i < lines.length; i += INSERT_ROWS) await tx.query(insert, [`[${lines.slice(i, i + INSERT_ROWS).join(",")}]`]);
          count += lines.length;
        }
        if (count !== rows) throw new Error(`The backup has ${count} ${table} rows where its manifest says ${rows}.`);
        total += count;
      }
      for (const [name, { last_value, is_called }] of Object.entries(manifest.database.sequences)) {
        await tx.query("SELECT setval($1::regclass, $2::bigint, $3)", [quoteIdent(name), last_value, is_called]);
      }
    });
    return total;
  } finally {
    await db.close();
  }
}

import { readFile } from "node:fs/promises";
import path from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { PrismaPGlite } from "pglite-prisma-adapter";
import { config } from "../kernel/config";
import { secureDataDir } from "./data-dir";
import { lockDataDir } from "./dir-lock";
import { databaseFailure, noteDatabaseFailure, noteDatabaseSuccess } from "./database-failures";
import { applyMigrations } from "./migrations";
import { type EmbeddedPg, PGliteThread } from "./pglite-thread";
import { pgliteRunner, pgRunner } from "./runners";
import { PrismaClient } from "../generated/prisma/client";
import { processSingleton } from "../kernel/singleton";

// Embedded PGlite in DATA_DIR, or PostgreSQL when DATABASE_URL is set; migrations applied on first use.

export type { Prisma } from "../generated/prisma/client";
import type { Prisma } from "../generated/prisma/client";
import { log } from "../kernel/log";

export interface Database {
  prisma: PrismaClient;
  kind: "pglite" | "postgres";
  pglite?: PGlite | PGliteThread;
  pool?: pg.Pool;
  close(): Promise<void>;
}

export interface OpenOptions {
  /** A running server's PGlite socket, for instance. */
  url?: string;
  schema?: string;
  skipMigrations?: boolean;
  poolSize?: number;
}

/** Past this wait for a pooled connection a request answers 503 with Retry-After instead of hanging. */
const CONNECTION_WAIT_MS = 10_000;

function pgPool(url: string, schema: string, max: number): pg.Pool {
  return new pg.Pool({ connectionString: url, max, options: `-c search_path="${schema}"`, connectionTimeoutMillis: CONNECTION_WAIT_MS });
}

export async function openDatabase(options: OpenOptions = {}): Promise<Database> {
  const c = config();
  const url = options.url ?? c.DATABASE_URL;
  const schema = options.schema ?? c.DATABASE_SCHEMA;
  if (url) {
    if (!options.skipMigrations) {
      const runner = await pgRunner(url, schema);
      try {
        await applyMigrations(runner);
      } finally {
        await runner.close();
      }
    }
    const pool = pgPool(url, schema, options.poolSize ?? c.DATABASE_POOL_SIZE);
    const prisma = new PrismaClient({ adapter: new PrismaPg(pool, { schema }) });
    return {
      prisma,
      kind: "postgres",
      pool,
      async close() {
        await prisma.$disconnect();
        await pool.end();
      },
    };
  }
  let pglite: PGlite | PGliteThread;
  let unlock = () => {};
  const open = async (dir?: string) => {
    const seedFile = dir ? undefined : holder.memorySeed;
    if (c.PGLITE_THREAD) return PGliteThread.create(dir, { seedFile });
    return seedFile ? PGlite.create({ loadDataDir: new Blob([await readFile(seedFile)]) }) : PGlite.create(dir);
  };
  if (c.dataDir) {
    const fixed = secureDataDir(c.dataDir);
    if (fixed) log().warn({ data_dir: c.dataDir, modes_set: fixed }, "made DATA_DIR private: file and directory modes set to 0600/0700");
    unlock = lockDataDir(c.dataDir);
    try {
      pglite = await open(path.join(/*turbopackIgnore: true*/ c.dataDir, "pglite"));
    } catch (err) {
      unlock();
      throw err;
    }
  } else {
    pglite = await open();
  }
  if (!options.skipMigrations) await applyMigrations(pgliteRunner(pglite));
  // The adapter is typed for PGlite's class; it calls only query, exec and transaction, which
  // PGliteThread implements with the same semantics.
  const prisma = new PrismaClient({ adapter: new PrismaPGlite(pglite as PGlite) });
  return {
    prisma,
    kind: "pglite",
    pglite,
    async close() {
      await prisma.$disconnect();
      await pglite.close();
      unlock();
    },
  };
}

// One per process: a PGlite data directory can be opened by one instance only.
const holder = processSingleton("database", (): { db?: Promise<Database>; memorySeed?: string } => ({}));

/** For tests: in-memory databases start from one migrated dump per run, saving each file PGlite's initdb seconds. */
export function seedMemoryDatabases(file: string | undefined): void {
  holder.memorySeed = file;
}

export function database(): Promise<Database> {
  holder.db ??= openDatabase().catch((err: unknown) => {
    holder.db = undefined;
    throw err;
  });
  return holder.db;
}

export async function getDb(): Promise<PrismaClient> {
  return (await database()).prisma;
}

export async function closeDatabase(): Promise<void> {
  const db = holder.db;
  holder.db = undefined;
  if (db) await (await db).close();
}

/** Straight through the driver, without the ORM's compiler and interpreter: for the hot write path. */
export async function sql<T>(text: string, params: unknown[] = []): Promise<T[]> {
  checkParamCount(params);
  // observed() written out: this runs for every statement, and needs no closure of its own.
  try {
    const db = await database();
    const rows = db.pool
      ? ((await db.pool.query(text, params)).rows as T[])
      : db.pglite
        ? (await (db.pglite as EmbeddedPg).query<T>(text, params)).rows
        : await db.prisma.$queryRawUnsafe<T[]>(text, ...params);
    noteDatabaseSuccess();
    return rows;
  } catch (err) {
    noteIfDatabaseFailure(err);
    throw err;
  }
}

function noteIfDatabaseFailure(err: unknown): void {
  if (databaseFailure(err)) noteDatabaseFailure(err);
}

async function observed<R>(fn: () => Promise<R>): Promise<R> {
  try {
    const result = await fn();
    noteDatabaseSuccess();
    return result;
  } catch (err) {
    noteIfDatabaseFailure(err);
    throw err;
  }
}

// Past the protocol's 65,535 parameters PostgreSQL refuses a statement, and PGlite's protocol
// parser breaks for good: multi-row builders chunk their rows under MAX_STATEMENT_PARAMS.
const MAX_STATEMENT_PARAMS = 30_000;
const PROTOCOL_MAX_PARAMS = 65_535;

function checkParamCount(params: readonly unknown[]): void {
  if (params.length > PROTOCOL_MAX_PARAMS) {
    throw new Error(`a statement with ${params.length} bind parameters was not sent (the protocol allows ${PROTOCOL_MAX_PARAMS}); its builder must chunk its rows`);
  }
}

export function chunkRows<R extends unknown[]>(rows: R[], extra = 0): R[][] {
  const width = Math.max(1, ...rows.map((r) => r.length));
  const perChunk = Math.max(1, Math.floor((MAX_STATEMENT_PARAMS - extra) / width));
  const chunks: R[][] = [];
  for (let i = 0; i < rows.length; i += perChunk) chunks.push(rows.slice(i, i + perChunk));
  return chunks;
}

/** `($1, $2::jsonb), …`: a cast follows its placeholder, or wraps it where it holds a `$`. */
export function valuesList(rows: unknown[][], casts: readonly string[] = []): { text: string; params: unknown[] } {
  const count = rows.reduce((n, r) => n + r.length, 0);
  if (count > MAX_STATEMENT_PARAMS) throw new Error(`a VALUES list of ${count} parameters (at most ${MAX_STATEMENT_PARAMS}): chunk its rows`);
  const params: unknown[] = [];
  const placeholder = (value: unknown, cast = "") => {
    const p = `$${params.push(value)}`;
    return cast.includes("$") ? cast.replace("$", () => p) : p + cast;
  };
  const tuples = rows.map((row) => `(${row.map((value, i) => placeholder(value, casts[i])).join(", ")})`);
  return { text: tuples.join(", "), params };
}

export type Query = <T>(text: string, params?: unknown[]) => Promise<T[]>;

export function prismaQuery(tx: Prisma.TransactionClient): Query {
  return <T>(text: string, params: unknown[] = []) => (checkParamCount(params), tx.$queryRawUnsafe<T[]>(text, ...params));
}

export function sqlTransaction<R>(fn: (query: Query) => Promise<R>): Promise<R> {
  return observed(() => transaction(fn));
}

async function transaction<R>(fn: (query: Query) => Promise<R>): Promise<R> {
  const db = await database();
  if (db.pool) {
    const client = await db.pool.connect();
    try {
      await client.query("BEGIN");
      const result = await fn(async <T>(text: string, params: unknown[] = []) => (checkParamCount(params), (await client.query(text, params)).rows as T[]));
      await client.query("COMMIT");
      return result;
    } catch (err) {
      await client.query("ROLLBACK").catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }
  if (db.pglite) {
    return (db.pglite as EmbeddedPg).transaction((tx) => fn(async <T>(text: string, params: unknown[] = []) => (checkParamCount(params), (await tx.query<T>(text, params)).rows)));
  }
  return db.prisma.$transaction((tx) => fn(prismaQuery(tx)));
}

import { mkdir } from "node:fs/promises";
import path from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { PrismaPGlite } from "pglite-prisma-adapter";
import { config } from "./config";
import { lockDataDir } from "./db/dir-lock";
import { applyMigrations } from "./db/migrations";
import { type EmbeddedPg, PGliteThread } from "./db/pglite-thread";
import { pgliteRunner, pgRunner } from "./db/runners";
import { PrismaClient } from "./generated/prisma/client";
import { processSingleton } from "./singleton";

// The Prisma client: embedded PGlite in DATA_DIR when DATABASE_URL is unset, PostgreSQL
// through @prisma/adapter-pg when it is set. Migrations are applied on first use.

export type Db = PrismaClient;
export type { Prisma } from "./generated/prisma/client";
import type { Prisma } from "./generated/prisma/client";

export interface Database {
  prisma: PrismaClient;
  kind: "pglite" | "postgres";
  /** The embedded instance, when kind is "pglite" and this process owns it (on its own thread unless PGLITE_THREAD=false). */
  pglite?: PGlite | PGliteThread;
  /** The connection pool Prisma uses, when kind is "postgres". */
  pool?: pg.Pool;
  close(): Promise<void>;
}

export interface OpenOptions {
  /** Connect through PostgreSQL wire protocol (e.g. a running server's PGlite socket). */
  url?: string;
  schema?: string;
  /** Skip applying migrations (they are applied by whoever owns the database). */
  skipMigrations?: boolean;
  poolSize?: number;
}

function pgPool(url: string, schema: string, max: number): pg.Pool {
  return new pg.Pool({ connectionString: url, max, options: `-c search_path="${schema}"` });
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
  const open = (dir?: string) => (c.PGLITE_THREAD ? PGliteThread.create(dir) : PGlite.create(dir));
  if (c.dataDir) {
    await mkdir(c.dataDir, { recursive: true });
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

// One database per process, whatever bundle asks (a PGlite data directory can be opened by
// one instance only).
const holder = processSingleton("database", (): { db?: Promise<Database> } => ({}));

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

/** Closes the process database (tests, scripts). */
export async function closeDatabase(): Promise<void> {
  const db = holder.db;
  holder.db = undefined;
  if (db) await (await db).close();
}

/**
 * One SQL statement straight through the driver (pg or PGlite), without the ORM's query
 * compiler and interpreter: for the few statements on the hot write path. Parameters are $1,
 * $2, ...; rows come back with the driver's type parsing (timestamptz as Date, jsonb parsed).
 */
export async function sql<T>(text: string, params: unknown[] = []): Promise<T[]> {
  const db = await database();
  if (db.pool) return (await db.pool.query(text, params)).rows as T[];
  if (db.pglite) return (await (db.pglite as EmbeddedPg).query<T>(text, params)).rows;
  return db.prisma.$queryRawUnsafe<T[]>(text, ...params);
}

/** `($1, $2::jsonb), ($3, $4::jsonb)` and the flat parameters, for a multi-row VALUES list. */
export function valuesList(rows: unknown[][], casts: readonly string[] = []): { text: string; params: unknown[] } {
  const params: unknown[] = [];
  const tuples = rows.map((row) => `(${row.map((value, i) => `$${params.push(value)}${casts[i] ?? ""}`).join(", ")})`);
  return { text: tuples.join(", "), params };
}

/** Runs statements on one connection. */
export type Query = <T>(text: string, params?: unknown[]) => Promise<T[]>;

/** A Query over a Prisma transaction, for code shared with driver-level transactions. */
export function prismaQuery(tx: Prisma.TransactionClient): Query {
  return <T>(text: string, params: unknown[] = []) => tx.$queryRawUnsafe<T[]>(text, ...params);
}

/** A transaction straight through the driver (see `sql`); rolled back if `fn` throws. */
export async function sqlTransaction<R>(fn: (query: Query) => Promise<R>): Promise<R> {
  const db = await database();
  if (db.pool) {
    const client = await db.pool.connect();
    try {
      await client.query("BEGIN");
      const result = await fn(async <T>(text: string, params: unknown[] = []) => (await client.query(text, params)).rows as T[]);
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
    return (db.pglite as EmbeddedPg).transaction((tx) => fn(async <T>(text: string, params: unknown[] = []) => (await tx.query<T>(text, params)).rows));
  }
  return db.prisma.$transaction((tx) => fn(<T>(text: string, params: unknown[] = []) => tx.$queryRawUnsafe<T[]>(text, ...params)));
}

import { mkdir } from "node:fs/promises";
import path from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { PrismaPg } from "@prisma/adapter-pg";
import { PrismaPGlite } from "pglite-prisma-adapter";
import { config } from "./config";
import { lockDataDir } from "./db/dir-lock";
import { applyMigrations } from "./db/migrations";
import { pgliteRunner, pgRunner } from "./db/runners";
import { PrismaClient } from "./generated/prisma/client";
import { processSingleton } from "./singleton";

// The Prisma client: embedded PGlite in DATA_DIR when DATABASE_URL is unset, PostgreSQL
// through @prisma/adapter-pg when it is set. Migrations are applied on first use.

export type Db = PrismaClient;
export type { Prisma } from "./generated/prisma/client";

export interface Database {
  prisma: PrismaClient;
  kind: "pglite" | "postgres";
  /** The embedded instance, when kind is "pglite" and this process owns it. */
  pglite?: PGlite;
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

function pgAdapter(url: string, schema: string, max: number) {
  return new PrismaPg(
    { connectionString: url, max, options: `-c search_path="${schema}"` },
    { schema },
  );
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
    const prisma = new PrismaClient({ adapter: pgAdapter(url, schema, options.poolSize ?? c.DATABASE_POOL_SIZE) });
    return { prisma, kind: "postgres", close: () => prisma.$disconnect() };
  }
  let pglite: PGlite;
  let unlock = () => {};
  if (c.dataDir) {
    await mkdir(c.dataDir, { recursive: true });
    unlock = lockDataDir(c.dataDir);
    try {
      pglite = await PGlite.create(path.join(c.dataDir, "pglite"));
    } catch (err) {
      unlock();
      throw err;
    }
  } else {
    pglite = await PGlite.create();
  }
  if (!options.skipMigrations) await applyMigrations(pgliteRunner(pglite));
  const prisma = new PrismaClient({ adapter: new PrismaPGlite(pglite) });
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

import { processSingleton } from "../kernel/singleton";
import { database, sql } from "./index";

// PGlite is a single-user backend with no checkpointer (XLogWrite asks for one only under a
// postmaster): its WAL grows until, at ~500 MB with PGlite 0.4, a write spins for ever in
// LWLockAcquire. A chore checkpoints instead.

/** PostgreSQL's own min_wal_size. */
const CHECKPOINT_AFTER_BYTES = 80 * 1024 * 1024;

export async function walSinceCheckpoint(): Promise<number> {
  const [row] = await sql<{ behind: string }>(
    `SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), redo_lsn)::text AS behind FROM pg_control_checkpoint()`,
  );
  return Number(row?.behind ?? 0);
}

export async function checkpointIfDue(afterBytes = CHECKPOINT_AFTER_BYTES): Promise<number> {
  const db = await database();
  if (db.kind !== "pglite" || !db.pglite) return 0;
  if ((await walSinceCheckpoint()) < afterBytes) return 0;
  await sql("CHECKPOINT");
  return 1;
}

// It has no autovacuum either: dead rows piled up and the planner had no statistics (with 100,000
// held sends, an idle second's release of due holds read every one of them). After enough writes
// each table is vacuumed and analyzed, one statement per table, so other statements go between.

const MAINTAIN_AFTER_BYTES = 16 * 1024 * 1024;
const maintained = processSingleton("embedded-maintenance", () => ({ lsn: null as string | null }));

const currentLsn = async () => (await sql<{ lsn: string }>(`SELECT pg_current_wal_insert_lsn()::text AS lsn`))[0]!.lsn;

/** The first call only notes where the WAL is: a database is maintained once written to, not at every start. */
export async function maintainIfDue(afterBytes = MAINTAIN_AFTER_BYTES): Promise<number> {
  const db = await database();
  if (db.kind !== "pglite" || !db.pglite) return 0;
  if (maintained.lsn === null) {
    maintained.lsn = await currentLsn();
    return 0;
  }
  const [row] = await sql<{ written: string }>(`SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1::pg_lsn)::text AS written`, [maintained.lsn]);
  if (Number(row?.written ?? 0) < afterBytes) return 0;
  const tables = await sql<{ name: string }>(`SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename`);
  for (const { name } of tables) await sql(`VACUUM (ANALYZE) "${name.replaceAll('"', '""')}"`);
  maintained.lsn = await currentLsn();
  return tables.length;
}

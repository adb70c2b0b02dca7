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

import { database, sql } from "./index";

// Embedded PGlite runs PostgreSQL as a single-user backend: there is no checkpointer, and a
// standalone backend never asks for a checkpoint however much WAL it writes (XLogWrite requests
// one only under a postmaster). Its WAL therefore grows without bound, and past some hundreds
// of megabytes (seen at ~500 MB with PGlite 0.4) a write spins for ever in LWLockAcquire: the
// database is wedged until the process restarts, and its restart replays all of it. A chore
// (server/engine/chores.ts) checkpoints once enough WAL has been written since the last one,
// so the WAL's segments are recycled instead. On PostgreSQL the server's checkpointer does this.

/** WAL written since the last checkpoint past which the chore checkpoints (PostgreSQL's own min_wal_size). */
const CHECKPOINT_AFTER_BYTES = 80 * 1024 * 1024;

/** Bytes of WAL written since the last checkpoint's redo point. */
export async function walSinceCheckpoint(): Promise<number> {
  const [row] = await sql<{ behind: string }>(
    `SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), redo_lsn)::text AS behind FROM pg_control_checkpoint()`,
  );
  return Number(row?.behind ?? 0);
}

/**
 * On embedded PGlite, checkpoints when at least `afterBytes` of WAL were written since the last
 * checkpoint; returns 1 when it did. A no-op on PostgreSQL (and on a client of another
 * process's PGlite socket: its owner runs the chore).
 */
export async function checkpointIfDue(afterBytes = CHECKPOINT_AFTER_BYTES): Promise<number> {
  const db = await database();
  if (db.kind !== "pglite" || !db.pglite) return 0;
  if ((await walSinceCheckpoint()) < afterBytes) return 0;
  await sql("CHECKPOINT");
  return 1;
}

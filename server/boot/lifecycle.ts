import { config } from "../kernel/config";
import { closeDatabase } from "../db";
import { releaseOwnClaims } from "../outbox/queue";
import { claimedDeliveries, stopEngine } from "../engine";
import { requestsSettled, stopAccepting } from "../transports/ops/http-hook";
import { log } from "../kernel/log";
import { beginShutdown } from "../kernel/shutdown";
import { processSingleton } from "../kernel/singleton";
import { withTimeout } from "../kernel/timeout";
import { releaseDeliveries } from "../webhooks/delivery";

// Graceful shutdown, owned by the app (Next.js would otherwise exit with 143 as soon as its
// HTTP server has closed, abandoning sends and webhook attempts under way). On SIGTERM or
// SIGINT an instance:
//   1. reports not ready (GET /readyz answers 503) and stops accepting connections;
//   2. ends long-lived streams (GET /v1/listen, GraphQL subscriptions) with a reconnect hint;
//   3. stops claiming outbox items and webhook deliveries, and lets the sends, webhook attempts
//      and requests under way finish, up to SHUTDOWN_GRACE_SECONDS;
//   4. returns whatever it still holds to the queue at once (another instance takes it over
//      without waiting for a lease to run out);
//   5. closes the database and exits 0.

/** After the grace, how long returning work and closing the database may take before the process just exits. */
const HARD_STOP_EXTRA_MS = 10_000;
const CLOSE_DATABASE_MS = 5_000;

const state = processSingleton("lifecycle", () => ({ installed: false, exiting: null as Promise<void> | null }));

/** Runs the shutdown once; resolves when it is done (the caller exits). */
function shutdown(reason: string): Promise<void> {
  state.exiting ??= run(reason);
  return state.exiting;
}

async function run(reason: string): Promise<void> {
  const graceMs = config().SHUTDOWN_GRACE_SECONDS * 1000;
  const deadline = Date.now() + graceMs;
  const left = () => Math.max(0, deadline - Date.now());
  const logger = log();
  logger.info({ reason, grace_seconds: graceMs / 1000 }, "shutting down");
  // Whatever hangs (a database that vanished, a driver that never returns), the process ends:
  // with 1, since work may not have been returned to the queue (its leases expire instead).
  setTimeout(() => {
    logger.error({ reason }, "shutdown did not finish in time; exiting");
    process.exit(1);
  }, graceMs + HARD_STOP_EXTRA_MS).unref();
  beginShutdown();
  stopAccepting();
  await Promise.all([stopEngine(left()), requestsSettled(left())]).catch((err: unknown) =>
    logger.error({ err }, "stopping the runners failed"),
  );
  try {
    const [items, deliveries] = await Promise.all([releaseOwnClaims(), releaseDeliveries(claimedDeliveries())]);
    if (items || deliveries) logger.warn({ outbox_items: items, webhook_deliveries: deliveries }, "returned unfinished work to the queue");
  } catch (err) {
    // Their leases run out and another instance takes them then.
    logger.error({ err }, "returning unfinished work failed");
  }
  await withTimeout(closeDatabase(), CLOSE_DATABASE_MS, `the database did not close within ${CLOSE_DATABASE_MS / 1000} s`).catch((err: unknown) =>
    logger.error({ err }, "closing the database failed"),
  );
  logger.info({ reason }, "stopped");
}

/**
 * Takes SIGTERM and SIGINT from Next.js: its own handlers (installed by `next start` and the
 * standalone server unless NEXT_MANUAL_SIG_HANDLE is set) would exit 143 with work under way.
 */
export function ownSignals(): void {
  if (state.installed) return;
  state.installed = true;
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    for (const listener of process.listeners(signal)) {
      if (listener.name === "cleanup") process.removeListener(signal, listener);
    }
    process.on(signal, () => {
      // A second Ctrl-C means now; a repeated SIGTERM changes nothing.
      if (state.exiting) {
        if (signal === "SIGINT") process.exit(130);
        return;
      }
      void shutdown(signal).finally(() => process.exit(0));
    });
  }
}

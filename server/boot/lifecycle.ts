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

// Graceful shutdown (steps: docs/production.md, Graceful shutdown), owned by the app: Next.js
// would exit 143 as soon as its HTTP server closed, abandoning sends under way.

/** After the grace, how long returning work and closing the database may take before the process just exits. */
const HARD_STOP_EXTRA_MS = 10_000;
const CLOSE_DATABASE_MS = 5_000;

const state = processSingleton("lifecycle", () => ({ installed: false, exiting: null as Promise<void> | null }));

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

/** Takes SIGTERM and SIGINT from Next.js, whose handlers (unless NEXT_MANUAL_SIG_HANDLE) exit 143 at once. */
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

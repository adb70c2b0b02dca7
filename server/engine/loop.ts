import { log } from "../observability/log";
import { beat, setRunning } from "../observability/heartbeats";

// What every loop of the embedded engine shares: a sleep that a signal cuts short, the loop
// itself (heartbeat each round, an error logged and slept off instead of ending the loop), and
// a stop that waits for the work under way up to a grace.

/** A sleep that `wake()` ends early. One sleeper per loop; a wake with no sleep under way is a no-op. */
export class Sleeper {
  private waiter: (() => void) | null = null;

  sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        if (this.waiter === done) this.waiter = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.waiter = done;
    });
  }

  wake(): void {
    this.waiter?.();
  }
}

/** After an error, a loop sleeps this long before its next round. */
const ERROR_PAUSE_MS = 1_000;

export interface LoopSpec {
  /** Heartbeat name (readiness reads it) and log label; helpers beside a primary loop pass none. */
  heartbeat?: string;
  label: string;
  running: () => boolean;
  /** One round; it sleeps as it sees fit. */
  round: () => Promise<void>;
  /** Where an error is slept off (a sleeper a stop or a signal can wake). */
  sleeper: Sleeper;
}

/** Goes round until `running()` is false. */
export async function runLoop(spec: LoopSpec): Promise<void> {
  if (spec.heartbeat) setRunning(spec.heartbeat, true);
  try {
    while (spec.running()) {
      if (spec.heartbeat) beat(spec.heartbeat);
      try {
        await spec.round();
      } catch (err) {
        log().error({ err }, `${spec.label} error`);
        await spec.sleeper.sleep(ERROR_PAUSE_MS);
      }
    }
  } finally {
    if (spec.heartbeat) setRunning(spec.heartbeat, false);
  }
}

/** Resolves when `work` settles or `graceMs` passes, whichever is first. */
export async function withinGrace(work: Promise<unknown>, graceMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([work.then(() => undefined, () => undefined), new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))]);
  clearTimeout(timer);
}

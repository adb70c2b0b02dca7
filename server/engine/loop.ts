import { log } from "../kernel/log";
import { beat, setRunning } from "../observability/heartbeats";

// What every loop of the embedded engine shares: a sleep that a signal cuts short, the loop
// itself (heartbeat each round, an error logged and slept off instead of ending the loop), and
// a stop that waits for the work under way up to a grace.

/**
 * A sleep that `wake()` ends early. One sleeper per loop. A wake while no sleep is under way
 * (the loop is busy with its round) is a no-op, unless the sleeper `remembers` wakes: then the
 * next sleep returns at once, so a signal that lands mid-round is never slept through. (The
 * outbox runner's primary loop counts its writes itself, and sleeps to gather a batch.)
 */
export class Sleeper {
  private waiter: (() => void) | null = null;
  private woken = false;

  constructor(private readonly options: { remembers?: boolean } = {}) {}

  sleep(ms: number): Promise<void> {
    if (this.woken) {
      this.woken = false;
      return Promise.resolve();
    }
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
    if (this.waiter) this.waiter();
    else if (this.options.remembers) this.woken = true;
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

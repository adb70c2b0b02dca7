import { log } from "../kernel/log";
import { beat, setRunning } from "../observability/heartbeats";

/** A wake during a round is lost unless the sleeper `remembers` it: then the next sleep returns at once. */
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

const ERROR_PAUSE_MS = 1_000;

export interface LoopSpec {
  heartbeat?: string;
  label: string;
  running: () => boolean;
  round: () => Promise<void>;
  sleeper: Sleeper;
}

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

export async function withinGrace(work: Promise<unknown>, graceMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([work.then(() => undefined, () => undefined), new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))]);
  clearTimeout(timer);
}

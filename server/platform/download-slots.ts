import { config } from "../kernel/config";
import { processSingleton } from "../kernel/singleton";

// How many provider media downloads run at once: at most `perProcess` in this process and
// `perLine` for one line, so a burst of webhooks with large media (or one line's) cannot hold
// unbounded memory, sockets and disk writes. Waiters are served in arrival order, skipping one
// whose line is at its limit, so a busy line never holds up another's download.

export interface DownloadSlots {
  run<T>(lineId: string, task: () => Promise<T>): Promise<T>;
  /** Downloads running now (for tests and metrics). */
  active(): number;
}

export function downloadSlots(perProcess: number, perLine: number): DownloadSlots {
  let running = 0;
  const byLine = new Map<string, number>();
  const waiting: { lineId: string; start: () => void }[] = [];

  const free = (lineId: string) => running < perProcess && (byLine.get(lineId) ?? 0) < perLine;
  const take = (lineId: string) => {
    running++;
    byLine.set(lineId, (byLine.get(lineId) ?? 0) + 1);
  };
  const release = (lineId: string) => {
    running--;
    const left = (byLine.get(lineId) ?? 1) - 1;
    if (left > 0) byLine.set(lineId, left);
    else byLine.delete(lineId);
    for (let i = 0; i < waiting.length && running < perProcess; ) {
      const w = waiting[i]!;
      if (free(w.lineId)) {
        waiting.splice(i, 1);
        take(w.lineId);
        w.start();
      } else {
        i++;
      }
    }
  };

  return {
    async run(lineId, task) {
      if (free(lineId)) take(lineId);
      else await new Promise<void>((start) => waiting.push({ lineId, start }));
      try {
        return await task();
      } finally {
        release(lineId);
      }
    },
    active: () => running,
  };
}

const shared = () =>
  processSingleton("provider-download-slots", () => {
    const c = config();
    return downloadSlots(c.PROVIDER_DOWNLOADS_PER_PROCESS, c.PROVIDER_DOWNLOADS_PER_LINE);
  });

/** Runs one provider media download within this process's and the line's limits. */
export function withDownloadSlot<T>(lineId: string, task: () => Promise<T>): Promise<T> {
  return shared().run(lineId, task);
}

import { config } from "../kernel/config";
import { processSingleton } from "../kernel/singleton";

// Bounded per process, so a burst of webhooks with large media cannot hold unbounded memory, sockets and disk writes,
// and shared fairly: the turn goes to the account served longest ago, and while another waits, one account starts at
// most half the slots. A waiter whose line is at `perLine` is skipped, never holding up another line's.

interface Owner {
  accountId: string;
  lineId: string;
}

export interface FairSlots {
  run<T>(owner: Owner, task: () => Promise<T>): Promise<T>;
  active(): number;
}

interface Waiter {
  lineId: string;
  start: () => void;
}

/** `perProcess` may be read at each start (a setting that can change while the process runs). */
export function fairSlots(options: { perProcess: number | (() => number); perLine?: number; waitingPerAccount?: number; busy?: string }): FairSlots {
  const { perLine = Infinity, waitingPerAccount = Infinity, busy = "too many tasks waiting" } = options;
  const limit = options.perProcess;
  const perProcess = typeof limit === "number" ? () => limit : limit;
  let running = 0;
  const byLine = new Map<string, number>();
  const byAccount = new Map<string, number>();
  const queues = new Map<string, Waiter[]>();
  /** When each account last started a task (a counter): the turn goes to the one that waited longest since. */
  const served = new Map<string, number>();
  let turns = 0;

  const add = (counts: Map<string, number>, key: string, n: number) => {
    const value = (counts.get(key) ?? 0) + n;
    if (value > 0) counts.set(key, value);
    else counts.delete(key);
  };
  const lineFree = (w: Waiter) => (byLine.get(w.lineId) ?? 0) < perLine;

  /** The next waiter to start: by turn, among accounts under their share, else (slots left idle otherwise) any. */
  const pick = (): { accountId: string; queue: Waiter[]; index: number } | null => {
    const share = Math.max(1, Math.floor(perProcess() / 2));
    for (const underShare of [true, false]) {
      let best: { accountId: string; queue: Waiter[]; index: number } | null = null;
      for (const [accountId, queue] of queues) {
        if (underShare && (byAccount.get(accountId) ?? 0) >= share) continue;
        if (best && (served.get(accountId) ?? 0) >= (served.get(best.accountId) ?? 0)) continue;
        const index = queue.findIndex(lineFree);
        if (index >= 0) best = { accountId, queue, index };
      }
      if (best) return best;
    }
    return null;
  };

  const dispatch = () => {
    while (running < perProcess()) {
      const next = pick();
      if (!next) return;
      const [waiter] = next.queue.splice(next.index, 1);
      if (!next.queue.length) queues.delete(next.accountId);
      served.set(next.accountId, ++turns);
      running++;
      add(byLine, waiter!.lineId, 1);
      add(byAccount, next.accountId, 1);
      waiter!.start();
    }
  };

  return {
    async run(owner, task) {
      const queue = queues.get(owner.accountId) ?? [];
      if (queue.length >= waitingPerAccount) throw new Error(busy);
      const started = new Promise<void>((start) => queue.push({ lineId: owner.lineId, start }));
      queues.set(owner.accountId, queue);
      dispatch();
      await started;
      try {
        return await task();
      } finally {
        running--;
        add(byLine, owner.lineId, -1);
        add(byAccount, owner.accountId, -1);
        if (!byAccount.has(owner.accountId) && !queues.has(owner.accountId)) served.delete(owner.accountId);
        dispatch();
      }
    },
    active: () => running,
  };
}

const DOWNLOADS_WAITING_PER_ACCOUNT = 64;

const downloads = () =>
  processSingleton("provider-download-slots", () => {
    const c = config();
    return fairSlots({
      perProcess: c.PROVIDER_DOWNLOADS_PER_PROCESS,
      perLine: c.PROVIDER_DOWNLOADS_PER_LINE,
      waitingPerAccount: DOWNLOADS_WAITING_PER_ACCOUNT,
      busy: `${DOWNLOADS_WAITING_PER_ACCOUNT} media downloads of this account are already waiting for a slot (PROVIDER_DOWNLOADS_PER_PROCESS): this one was not started`,
    });
  });

export function withDownloadSlot<T>(owner: Owner, task: () => Promise<T>): Promise<T> {
  return downloads().run(owner, task);
}

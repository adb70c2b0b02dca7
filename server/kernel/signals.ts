import { processSingleton } from "./singleton";

// In-process nudges after a commit (docs/architecture.md, "Signals"): who fires and who subscribes.

export interface StoredItem {
  id: string;
  lineId: string;
  serial: boolean;
}

export interface Signals {
  "outbox.stored": StoredItem;
  "webhooks.due": null;
  "line.recovered": { lineId: string };
  "provider.answered": { lineId: string; reachable: boolean; reason: string | null };
}

export type SignalName = keyof Signals;
type Handler<K extends SignalName> = (payload: Signals[K]) => void | Promise<unknown>;

const handlers = processSingleton("signals", () => new Map<SignalName, Set<Handler<never>>>());

/** Never throws: the change it follows is committed, and a failing subscriber's own poll catches up. */
export function fire<K extends SignalName>(name: K, ...args: Signals[K] extends null ? [] : [Signals[K]]): void {
  const set = handlers.get(name);
  if (!set) return;
  const payload = (args[0] ?? null) as Signals[K];
  for (const handler of set) {
    try {
      const done = (handler as Handler<K>)(payload);
      if (done instanceof Promise) done.catch((err: unknown) => process.emitWarning(`a subscriber of ${name} failed: ${(err as Error).message}`));
    } catch (err) {
      process.emitWarning(`a subscriber of ${name} failed: ${(err as Error).message}`);
    }
  }
}

export async function fireAndWait<K extends SignalName>(name: K, payload: Signals[K]): Promise<void> {
  const set = handlers.get(name);
  if (!set) return;
  await Promise.all(
    [...set].map(async (handler) => {
      try {
        await (handler as Handler<K>)(payload);
      } catch (err) {
        process.emitWarning(`a subscriber of ${name} failed: ${(err as Error).message}`);
      }
    }),
  );
}

export function subscribe<K extends SignalName>(name: K, handler: Handler<K>): () => void {
  let set = handlers.get(name);
  if (!set) handlers.set(name, (set = new Set()));
  set.add(handler as Handler<never>);
  return () => void set.delete(handler as Handler<never>);
}

import { processSingleton } from "./singleton";

// In-process signals: a service or the write path fires one after a commit, and whatever
// drives the work subscribes when it starts (the embedded runners, or the Inngest announcer).
// So no service imports a runner, and a process that runs no engine (a test, the operator CLI)
// fires into nothing. A signal is a nudge, never the work itself: everything it points at is
// already committed, and the runners' own polls find it if a nudge is missed.

/** An outbox item was committed pending. */
export interface StoredItem {
  id: string;
  lineId: string;
  /** On a provider line that sends one item at a time (server/outbox/serial.ts). */
  serial: boolean;
}

export interface Signals {
  /** Outbox items were committed pending: their engine should claim them. */
  "outbox.stored": StoredItem;
  /** A change that wrote webhook deliveries committed: the sender should claim them. */
  "webhooks.due": null;
  /** A provider line answered again after being disconnected: what it missed should be caught up. */
  "line.recovered": { lineId: string };
  /** A call to a provider line's provider ended: it answered (of any kind), or it could not be reached. */
  "provider.answered": { lineId: string; reachable: boolean; reason: string | null };
}

export type SignalName = keyof Signals;
type Handler<K extends SignalName> = (payload: Signals[K]) => void | Promise<unknown>;

const handlers = processSingleton("signals", () => new Map<SignalName, Set<Handler<never>>>());

/**
 * Tells the subscribers. Never throws: the change it follows is committed, and a subscriber
 * that fails must not turn the caller's success into an error (its own poll catches up).
 */
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

/**
 * Tells the subscribers and waits for what they do (a handler's promise), for a signal whose
 * effect should land before the caller goes on. Never throws either.
 */
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

/** Subscribes `handler` to `name`; returns the unsubscribe. */
export function subscribe<K extends SignalName>(name: K, handler: Handler<K>): () => void {
  let set = handlers.get(name);
  if (!set) handlers.set(name, (set = new Set()));
  set.add(handler as Handler<never>);
  return () => void set.delete(handler as Handler<never>);
}

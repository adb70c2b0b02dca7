import { randomUUID } from "node:crypto";
import { config } from "../kernel/config";
import type { Query } from "../db";
import { listen } from "../db/pg-listen";
import { untilShutdown } from "../kernel/shutdown";
import { processSingleton } from "../kernel/singleton";
import { log } from "../kernel/log";

// Events carry IDs only: each subscriber loads what it shows through its own tenancy checks. On
// PostgreSQL the publisher NOTIFYs inside the transaction that makes the change (heard exactly at
// commit, no extra round trip), and each instance's LISTEN connection hands them on.

const OUTBOX_LIVE_STATUSES = ["pending", "sent", "failed"] as const;

export type LiveEvent =
  | { type: "message.received"; accountId: string; lineId: string; chatId: string; messageId: string }
  | {
      type: "outbox.status";
      accountId: string;
      lineId: string;
      chatId: string;
      outboxId: string;
      /** The key that made the send: a key with guardrails hears only of its own. */
      apiKeyId: string | null;
      status: (typeof OUTBOX_LIVE_STATUSES)[number];
    }
  /** A contact's reaction, typing or read receipt, or a sent message's delivery status. */
  | { type: "chat.activity"; accountId: string; lineId: string; chatId: string; kind: ChatActivityKind; typing?: boolean };

export const CHAT_ACTIVITY_KINDS = ["reaction", "typing", "receipt", "delivery"] as const;
type ChatActivityKind = (typeof CHAT_ACTIVITY_KINDS)[number];

type Listener = (event: LiveEvent) => void;

/** NOTIFY refuses payloads of 8,000 bytes or more. */
const MAX_PAYLOAD_BYTES = 7_000;
const MAX_BACKLOG = 1_000;

const state = processSingleton("live-events", () => ({
  instance: randomUUID(),
  listeners: new Set<Listener>(),
  listening: null as Promise<void> | null,
}));

/** One channel per schema, so deployments sharing a database never hear each other. */
const channel = () => `relay_live:${config().DATABASE_SCHEMA}`;

export function publishLocal(events: readonly LiveEvent[]): void {
  for (const event of events) {
    for (const listener of state.listeners) {
      try {
        listener(event);
      } catch (err) {
        log().error({ err }, "a subscriber failed");
      }
    }
  }
}

/** Null without PostgreSQL: embedded PGlite serves one process. */
export function livePayloads(events: readonly LiveEvent[]): { channel: string; payloads: string[] } | null {
  if (!config().DATABASE_URL || events.length === 0) return null;
  const payloads: string[] = [];
  let batch: LiveEvent[] = [];
  let size = 0;
  const flush = () => {
    if (batch.length) payloads.push(JSON.stringify({ from: state.instance, events: batch }));
    batch = [];
    size = 0;
  };
  for (const event of events) {
    const bytes = Buffer.byteLength(JSON.stringify(event)) + 1;
    if (size + bytes > MAX_PAYLOAD_BYTES) flush();
    batch.push(event);
    size += bytes;
  }
  flush();
  return { channel: channel(), payloads };
}

export async function notifyLiveAtCommit(query: Query, events: readonly LiveEvent[]): Promise<void> {
  const notify = livePayloads(events);
  if (notify) await query(`SELECT pg_notify($1, p)::text FROM unnest($2::text[]) AS p`, [notify.channel, notify.payloads]);
}

function receive(payload: string): void {
  try {
    const message = JSON.parse(payload) as { from: string; events: LiveEvent[] };
    if (message.from !== state.instance) publishLocal(message.events);
  } catch (err) {
    log().error({ err }, "unreadable notification");
  }
}

function startListener(): void {
  const url = config().DATABASE_URL;
  if (!url || state.listening) return;
  state.listening = listen(url, channel(), {
    onPayload: receive,
    onDown: () => log().error("lost the LISTEN connection for live events; reconnecting (meanwhile only events published here reach this instance's subscribers)"),
  });
}

export async function liveListenerReady(): Promise<void> {
  await state.listening;
}

export function liveSubscriberCount(): number {
  return state.listeners.size;
}

export function subscribeLive(listener: Listener): () => void {
  startListener();
  state.listeners.add(listener);
  return () => void state.listeners.delete(listener);
}

/** Ends when the consumer returns, `consumerSignal` aborts or the process stops; MAX_BACKLOG events behind, with an error. */
export function liveEvents(accept: (event: LiveEvent) => boolean, consumerSignal?: AbortSignal): AsyncIterableIterator<LiveEvent> {
  const { signal, release } = untilShutdown(consumerSignal);
  let queue: LiveEvent[] = [];
  let wake: (() => void) | null = null;
  let ended = false;
  let failure: Error | null = null;
  const end = () => {
    ended = true;
    unsubscribe();
    signal.removeEventListener("abort", end);
    release();
    wake?.();
  };
  const unsubscribe = subscribeLive((event) => {
    if (ended || !accept(event)) return;
    if (queue.length >= MAX_BACKLOG) {
      queue = [];
      failure = new Error(`live event subscriber fell ${MAX_BACKLOG} events behind and was ended`);
      end();
      return;
    }
    queue.push(event);
    wake?.();
  });
  if (signal.aborted) end();
  else signal.addEventListener("abort", end, { once: true });
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    async next() {
      while (queue.length === 0 && !ended) await new Promise<void>((resolve) => (wake = resolve));
      wake = null;
      const value = queue.shift();
      if (value) return { value, done: false };
      if (failure) throw failure;
      return { value: undefined, done: true };
    },
    async return() {
      end();
      queue = [];
      return { value: undefined, done: true };
    },
  };
}

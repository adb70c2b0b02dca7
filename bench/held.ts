// The held items of the inbound part (bench/pipeline.ts): `held` scheduled sends (a day ahead)
// made through the API, as a client scheduling a campaign would, with POST /v1/messages/batch
// (1,000 per request) to the contacts that wrote to the inbound line; then GET
// /v1/outbox?hold_reason= latency and the server's idle CPU with them held. Afterwards the
// pipeline runs its 1-webhook scenario again on the same database: the held rows must not
// change it.
import type pg from "pg";
import { senderAddress, SENDERS } from "./inbound";
import { load } from "./load";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const DAY_MS = 86_400_000;
const BATCH = 1_000;
/** Batch requests in flight: each is worked on 32 messages at a time by the server already. */
const IN_FLIGHT = 2;
export const IDLE_SECONDS = 10;

export interface OutboxRead {
  what: string;
  items: number;
  p50: number;
  p99: number;
  rps: number;
}

export interface HeldResults {
  held: number;
  /** Wall time of the batch requests, and the messages they refused (by error code). */
  fillSeconds: number;
  refused: Record<string, number>;
  /** Held rows of the line afterwards (status held, hold reason scheduled). */
  heldRows: number;
  reads: OutboxRead[];
  /** CPU while idle, % of one core, before the fill and with the items held: the server's, and its PostgreSQL backends' (null on PGlite). */
  idleBefore: IdleCpu;
  idleAfter: IdleCpu;
}

export interface IdleCpu {
  server: number;
  db: number | null;
}

interface HeldTarget {
  base: string;
  auth: Record<string, string>;
  client: pg.Client;
  /** CPU % of a core over IDLE_SECONDS with nothing to do (after the server settled). */
  idleCpu: () => Promise<IdleCpu>;
  line: string;
  lineId: string;
  held: number;
  say: (what: string) => void;
}

export async function measureHeld(t: HeldTarget): Promise<HeldResults> {
  const headers = { ...t.auth, "content-type": "application/json" };
  t.say(`idle CPU for ${IDLE_SECONDS} s, nothing held`);
  const idleBefore = await t.idleCpu();

  t.say(`${t.held} scheduled sends through POST /v1/messages/batch`);
  const sendAt = Date.now() + DAY_MS;
  const refused: Record<string, number> = {};
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < t.held) {
        const first = next;
        next = Math.min(t.held, next + BATCH);
        const messages = [];
        for (let i = first; i < next; i++) messages.push({ from: t.line, to: senderAddress(i % SENDERS), text: `scheduled ${i}`, send_at: sendAt + i });
        const res = await fetch(`${t.base}/v1/messages/batch`, { method: "POST", headers, body: JSON.stringify({ messages }) });
        const answer = (await res.json()) as { data?: { object?: string; error?: { code: string } }[] };
        if (res.status !== 200 || answer.data?.length !== messages.length) throw new Error(`POST /v1/messages/batch answered ${res.status}: ${JSON.stringify(answer).slice(0, 300)}`);
        for (const item of answer.data) if (item.object !== "outbox_item") refused[item.error?.code ?? "?"] = (refused[item.error?.code ?? "?"] ?? 0) + 1;
      }
    }),
  );
  const fillSeconds = (performance.now() - started) / 1000;
  const { rows } = await t.client.query(`SELECT count(*)::int AS n FROM "OutboxItem" WHERE "lineId" = $1 AND status = 'held' AND "holdReason" = 'scheduled'`, [t.lineId]);
  const heldRows = rows[0].n as number;

  // One connection: the latency of one read at a time, as a dashboard or a client paging asks.
  const reads: OutboxRead[] = [];
  const from = `&from=${encodeURIComponent(t.line)}`;
  for (const [what, query] of [
    ["scheduled, one line (from=)", `hold_reason=scheduled${from}`],
    ["scheduled, whole account", "hold_reason=scheduled"],
    ["quiet_hours (none held), whole account", "hold_reason=quiet_hours"],
  ] as const) {
    const url = `${t.base}/v1/outbox?${query}`;
    const res = await fetch(url, { headers: t.auth });
    const page = (await res.json()) as { data?: unknown[] };
    if (res.status !== 200 || !page.data) throw new Error(`GET /v1/outbox?${query} answered ${res.status}: ${JSON.stringify(page).slice(0, 300)}`);
    await load({ url, headers: t.auth, connections: 1, seconds: 1 });
    const r = await load({ url, headers: t.auth, connections: 1, seconds: 5 });
    reads.push({ what, items: page.data.length, p50: r.p50, p99: r.p99, rps: r.rps });
  }

  t.say(`idle CPU for ${IDLE_SECONDS} s, ${heldRows} held`);
  const idleAfter = await t.idleCpu();
  return { held: t.held, fillSeconds, refused, heldRows, reads, idleBefore, idleAfter };
}

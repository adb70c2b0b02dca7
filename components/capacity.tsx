"use client";
import { useQuery } from "@tanstack/react-query";
import type { inferRouterOutputs } from "@trpc/server";
import Link from "next/link";
import { HOLD_LABEL, HOLD_MEANING, type HoldReason } from "./holds";
import { ErrorText, Loading } from "./widgets";
import { useNow, When } from "./when";
import { useTRPC } from "@/lib/trpc";
import type { AppRouter } from "@/server/transports/trpc/router";
import styles from "./sending.module.css";

// What a line can still send and what waits (GET /v1/capacity): its new-contact budgets as
// bars (used of the limit, when a slot frees), whether quiet hours hold sends now, the sends
// held by reason, and when the next new conversation may start.

type LineCapacity = inferRouterOutputs<AppRouter>["lines"]["capacity"]["lines"][number];
type Window = LineCapacity["new_contacts"]["hour"];

const REASONS = Object.keys(HOLD_LABEL) as HoldReason[];

function Budget({ title, w }: { title: string; w: Window }) {
  const share = w.limit ? Math.min(1, w.used / w.limit) : 0;
  const full = w.limit !== null && w.used >= w.limit;
  return (
    <div className={styles.capCard}>
      <div className={styles.capTitle}>{title}</div>
      {w.limit === null ? (
        <div className={styles.capValue}>
          {w.used} <span className="small muted">opened · no limit</span>
        </div>
      ) : (
        <>
          <div className={styles.capValue}>
            {w.used} <span className="small muted">of {w.limit} used</span>
          </div>
          <div className={styles.bar} aria-hidden="true">
            <div className={`${styles.barFill}${full ? ` ${styles.barFull}` : ""}`} style={{ width: `${share * 100}%` }} />
          </div>
          <div className="small muted">{w.limit === 0 ? "A limit of 0: no new conversation starts." : `${w.remaining ?? 0} left`}</div>
        </>
      )}
      {w.resets_at ? (
        <div className="small muted">
          Oldest frees <When ms={w.resets_at} show="relative" />
        </div>
      ) : null}
    </div>
  );
}

interface QuietWindow {
  start: string;
  end: string;
  timezone: string;
}

function LineCapacityView({ c, handle, contactFirst, quiet }: { c: LineCapacity; handle: string; contactFirst: boolean; quiet: QuietWindow | null }) {
  const now = useNow();
  const waiting = REASONS.reduce((n, r) => n + (c.queued[r] ?? 0), 0);
  return (
    <div className="stack" data-testid="capacity">
      {contactFirst ? (
        <p className="small muted" style={{ margin: 0 }}>
          Contact first is on: every send answers someone who wrote first, so no budget is spent.
        </p>
      ) : null}
      <div className={styles.capGrid}>
        <Budget title="New contacts · past hour" w={c.new_contacts.hour} />
        <Budget title="New contacts · past 24 hours" w={c.new_contacts.day} />
        <div className={styles.capCard}>
          <div className={styles.capTitle}>Quiet hours</div>
          {c.quiet_hours.active ? (
            <>
              <div className={styles.capValue}>
                <span className={`badge warn`}>Quiet now</span>
              </div>
              {c.quiet_hours.until ? (
                <div className="small">
                  Until <When ms={c.quiet_hours.until} />
                </div>
              ) : null}
            </>
          ) : quiet ? (
            <div className={styles.capValue}>
              <span className="badge ok">Not quiet now</span>
            </div>
          ) : (
            <div className={styles.capValue}>
              <span className="small muted">None set</span>
            </div>
          )}
          {quiet ? (
            <div className="small muted">
              {quiet.start}–{quiet.end} ({quiet.timezone})
            </div>
          ) : null}
        </div>
        <div className={styles.capCard}>
          <div className={styles.capTitle}>Next new conversation</div>
          <div className={styles.capValue}>
            {c.next_slot_at === null ? (
              <span className="small">None while a budget is 0</span>
            ) : c.next_slot_at <= now + 30_000 ? (
              "Now"
            ) : (
              <When ms={c.next_slot_at} show="relative" />
            )}
          </div>
          {c.next_slot_at !== null && c.next_slot_at > now + 30_000 ? (
            <div className="small muted">
              <When ms={c.next_slot_at} show="absolute" />
            </div>
          ) : null}
        </div>
      </div>
      <div>
        <div className={styles.capTitle}>Waiting to send</div>
        {waiting === 0 ? (
          <p className="small muted" style={{ margin: "0.25rem 0 0" }}>
            Nothing waits on this line.
          </p>
        ) : (
          <>
            <ul className={styles.queued} aria-label="Waiting sends by reason">
              {REASONS.filter((r) => c.queued[r]).map((r) => (
                <li key={r} title={HOLD_MEANING[r]}>
                  <span>{HOLD_LABEL[r]}</span>
                  <strong>{c.queued[r]}</strong>
                </li>
              ))}
            </ul>
            <Link className="small" href={`/dashboard/outbox?status=held&line=${encodeURIComponent(handle)}`}>
              See them in the outbox
            </Link>
          </>
        )}
      </div>
    </div>
  );
}

/** The capacity of one line, kept current. */
export function CapacityPanel({ lineId, handle, contactFirst, quiet }: { lineId: string; handle: string; contactFirst: boolean; quiet: QuietWindow | null }) {
  const trpc = useTRPC();
  const capacity = useQuery({ ...trpc.lines.capacity.queryOptions({ from: lineId }), refetchInterval: 10_000 });
  const c = capacity.data?.lines[0];
  return (
    <section className="panel stack" aria-labelledby="capacity-heading">
      <h2 id="capacity-heading" className={styles.sectionTitle}>
        Capacity
      </h2>
      <ErrorText error={capacity.error} />
      {capacity.isPending ? <Loading what="Loading capacity" /> : c ? <LineCapacityView c={c} handle={handle} contactFirst={contactFirst} quiet={quiet} /> : null}
    </section>
  );
}

"use client";
import { useInfiniteQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useRouter, useSearchParams } from "next/navigation";
import { Suspense, useEffect } from "react";
import { LineFilter, lineName, useLines } from "@/components/lines";
import { ListTable } from "@/components/table";
import { ApprovalActions, HoldBadge, HoldWhen, PendingActions } from "@/components/holds";
import { ErrorText, Loading, StatusBadge, Time } from "@/components/widgets";
import { useTRPC } from "@/lib/trpc";
import styles from "@/components/sending.module.css";
import type { OutboxStatus } from "@/server/services/messaging/outbox-statuses";

// Every send of the account, newest first: to whom, from which line, what, its state with the
// reason in words when it failed or waits (held: scheduled, quiet hours, …, and when it goes),
// and a link to its chat; filtered by status (and "held") and line. A pending send can be
// rescheduled or canceled; one waiting for approval, approved or rejected.

/** The status filter's values: the API's statuses, and "held" (pending items that wait). */
const FILTERS = ["pending", "held", "claimed", "sent", "failed"] as const;
type Filter = (typeof FILTERS)[number];
const FILTER_LABEL: Record<Filter, string> = { pending: "pending", held: "held (waiting)", claimed: "claimed", sent: "sent", failed: "failed" };

const KIND: Record<string, string> = { message: "Message", reaction: "Reaction", typing: "Typing", receipt: "Read receipt" };

interface Payload {
  chat_id?: string;
  to?: string;
  text?: string | null;
  attachments?: string[];
  is_audio_message?: boolean;
  type?: string;
  is_typing?: boolean;
}

/** The send in a few words, for the dialogs. */
function described(kind: string, p: Payload): string {
  const text = what(kind, p);
  const short = text.length > 40 ? `${text.slice(0, 39)}…` : text;
  return `the ${(KIND[kind] ?? kind).toLowerCase()}${short ? ` “${short}”` : ""}${p.to ? ` to ${p.to}` : ""}`;
}

function what(kind: string, p: Payload): string {
  if (kind === "message") return p.text ? p.text : p.is_audio_message ? "Voice memo" : p.attachments?.length ? "Attachment" : "";
  if (kind === "reaction") return p.type ?? "";
  if (kind === "typing") return p.is_typing ? "started typing" : "stopped typing";
  return "";
}

function Outbox() {
  const trpc = useTRPC();
  const router = useRouter();
  const params = useSearchParams();
  const qc = useQueryClient();
  const raw = params.get("status") ?? "";
  const filter = (FILTERS as readonly string[]).includes(raw) ? (raw as Filter) : undefined;
  // "held" asks for pending items and keeps those that wait (a held item is pending on the wire).
  const status: OutboxStatus | undefined = filter === "held" ? "pending" : filter;
  const line = params.get("line") ?? "";
  const lines = useLines();
  const handleOf = new Map(lines.lines.map((l) => [l.id, lineName(l)]));
  const items = useInfiniteQuery(
    trpc.outbox.list.infiniteQueryOptions(
      { limit: 50, status, from: line || undefined },
      { getNextPageParam: (p) => p.next_cursor ?? undefined, refetchInterval: 5_000 },
    ),
  );
  const all = items.data?.pages.flatMap((p) => p.data) ?? [];
  const rows = filter === "held" ? all.filter((o) => o.hold_reason !== null) : all;
  const refresh = () => void qc.invalidateQueries({ queryKey: trpc.outbox.list.pathKey() });
  // Pending items that are on their way are left out of "held": read on while few are shown.
  const readOn = filter === "held" && rows.length < 20 && items.hasNextPage && !items.isFetching;
  useEffect(() => {
    if (readOn) void items.fetchNextPage();
  }, [readOn, items]);
  const go = (next: { status?: string; line?: string }) => {
    const q = new URLSearchParams();
    const s = next.status ?? filter ?? "";
    const l = next.line ?? line;
    if (s) q.set("status", s);
    if (l) q.set("line", l);
    router.replace(`/dashboard/outbox${q.size ? `?${q}` : ""}`);
  };
  return (
    <>
      <h1>Outbox</h1>
      <div className="panel row">
        <label>
          Status
          <select value={filter ?? ""} onChange={(e) => go({ status: e.target.value })}>
            <option value="">all</option>
            {FILTERS.map((s) => (
              <option key={s} value={s}>
                {FILTER_LABEL[s]}
              </option>
            ))}
          </select>
        </label>
        <LineFilter lines={lines.lines} value={line} onChange={(h) => go({ line: h })} />
      </div>
      <div className="panel">
        <ErrorText error={items.error} />
        <ListTable
          label="Outbox items"
          loading={items.isPending}
          rows={rows}
          empty={
            filter === "held"
              ? `Nothing waits${line ? ` on ${line}` : ""}: no scheduled send, and none held by quiet hours or a new-contact budget.`
              : `Nothing in the outbox${filter ? ` with status ${filter}` : ""}${line ? ` on ${line}` : ""}.`
          }
          headers={["To", "What", "Status", "Attempts", "Created", ""]}
          row={(o) => {
            const p = (o.payload ?? {}) as Payload;
            return (
              <tr key={o.id} data-testid="outbox-item">
                <td>
                  <div className="mono small">{p.to ?? "—"}</div>
                  <div className={`small muted ${styles.via}`}>via {handleOf.get(o.line_id) ?? o.line_id}</div>
                </td>
                <td>
                  <span className="small muted">{KIND[o.kind] ?? o.kind}</span>
                  <div className="clamp">{what(o.kind, p)}</div>
                </td>
                <td>
                  {o.hold_reason ? (
                    <div className={styles.statusCell}>
                      <div>
                        <HoldBadge reason={o.hold_reason} />
                      </div>
                      <div className="small">
                        <HoldWhen reason={o.hold_reason} notBefore={o.not_before} />
                      </div>
                    </div>
                  ) : o.error === "rejected" ? (
                    <div className={styles.statusCell}>
                      <div>
                        <StatusBadge status="rejected" />
                      </div>
                      <div className="small muted">
                        <Time ms={o.completed_at} />
                      </div>
                    </div>
                  ) : o.canceled_at ? (
                    <div className={styles.statusCell}>
                      <div>
                        <span className="badge">canceled</span>
                      </div>
                      <div className="small muted">
                        <Time ms={o.canceled_at} />
                      </div>
                    </div>
                  ) : (
                    <div className={styles.statusCell}>
                      <div>
                        <StatusBadge status={o.status} />
                      </div>
                      {o.error ? <div className="small error">{o.error}</div> : null}
                    </div>
                  )}
                </td>
                <td>
                  {o.attempts}/{o.max_attempts}
                </td>
                <td>
                  <Time ms={o.created_at} />
                  <div className={`small muted mono ${styles.id}`}>{o.id}</div>
                </td>
                <td>
                  <div className={styles.rowActions}>
                    {p.chat_id ? <Link href={`/dashboard/chats/${p.chat_id}`}>Open chat</Link> : null}
                    {o.status === "pending" ? (
                      <div className="row">
                        {o.hold_reason === "approval" ? (
                          <ApprovalActions id={o.id} what={described(o.kind, p)} onDone={refresh} />
                        ) : (
                          <PendingActions id={o.id} notBefore={o.not_before} what={described(o.kind, p)} onDone={refresh} />
                        )}
                      </div>
                    ) : null}
                  </div>
                </td>
              </tr>
            );
          }}
          more={{ has: items.hasNextPage, loading: items.isFetchingNextPage, load: () => void items.fetchNextPage() }}
        />
      </div>
    </>
  );
}

export default function OutboxPage() {
  return (
    <Suspense fallback={<Loading />}>
      <Outbox />
    </Suspense>
  );
}

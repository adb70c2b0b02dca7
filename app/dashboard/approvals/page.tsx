"use client";
import { useInfiniteQuery, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useState } from "react";
import { ApprovalActions } from "@/components/holds";
import { LiveStatus, useLiveSubscription } from "@/components/live-subscription";
import { Empty, ErrorText, Loading, StatusBadge, Time } from "@/components/widgets";
import { When } from "@/components/when";
import styles from "@/components/approvals.module.css";
import sending from "@/components/sending.module.css";
import { useTRPC } from "@/lib/trpc";

// Sends by API keys with "require approval", oldest first: what the key wants to send, to whom,
// on which line, which key asked and when, beside the chat's last messages, with Approve and
// Reject. Kept current live (a new send, one reviewed elsewhere, a new message in its chat);
// what was reviewed here stays listed below with its status as it moves on.

const OUTBOX_LIVE = `subscription { outboxItemUpdated { status outboxId } }`;
const MESSAGES_LIVE = `subscription { messageReceived { id } }`;
const REACTION_EMOJI: Record<string, string> = { love: "❤️", like: "👍", dislike: "👎", laugh: "😂", emphasize: "‼️", question: "❓" };

interface Reviewed {
  id: string;
  decision: "approved" | "rejected";
  what: string;
  to: string;
  chatId: string | null;
}

/** A short quote of a text for labels and the reviewed list. */
const quote = (text: string, n = 40) => `“${text.length > n ? `${text.slice(0, n - 1)}…` : text}”`;

function ReviewedItem({ r }: { r: Reviewed }) {
  const trpc = useTRPC();
  // Its status as it moves on (sending, then sent or failed), until it settles.
  const item = useQuery({
    ...trpc.outbox.get.queryOptions({ id: r.id }),
    refetchInterval: (q) => (q.state.data && q.state.data.status !== "pending" && q.state.data.status !== "claimed" ? false : 2_000),
  });
  const o = item.data;
  const status = !o ? null : o.error === "rejected" ? "rejected" : o.hold_reason === "scheduled" ? "scheduled" : o.status === "pending" || o.status === "claimed" ? "sending" : o.status;
  return (
    <li data-testid="reviewed">
      <strong>{r.decision === "approved" ? "Approved" : "Rejected"}</strong>
      <span>
        {r.what} to {r.to}
      </span>
      {status ? <StatusBadge status={status} /> : null}
      {r.chatId ? (
        <Link className="small" href={`/dashboard/chats/${r.chatId}`}>
          Open chat
        </Link>
      ) : null}
    </li>
  );
}

export default function ApprovalsPage() {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const queue = useInfiniteQuery(
    trpc.outbox.approvals.infiniteQueryOptions({ limit: 20 }, { getNextPageParam: (p) => p.next_cursor ?? undefined, refetchInterval: 30_000 }),
  );
  const refresh = () => {
    void qc.invalidateQueries({ queryKey: trpc.outbox.approvals.pathKey() });
    void qc.invalidateQueries({ queryKey: trpc.outbox.approvalCount.pathKey() });
  };
  const live = useLiveSubscription(OUTBOX_LIVE, {}, refresh);
  useLiveSubscription(MESSAGES_LIVE, {}, refresh);
  const [reviewed, setReviewed] = useState<Reviewed[]>([]);
  const items = queue.data?.pages.flatMap((p) => p.data) ?? [];
  const shown = items.filter((i) => !reviewed.some((r) => r.id === i.id));

  return (
    <>
      <div className="row spread">
        <h1>Approvals</h1>
        <LiveStatus state={live} />
      </div>
      <p className="muted small">
        Sends by API keys that need your approval wait here (set on <Link href="/dashboard/keys">API keys</Link> as <em>Require approval</em>). Approve to send
        it now, or at the time it asked for; reject and it is never sent (the key sees it failed, with error <span className="mono">rejected</span>).
      </p>
      <ErrorText error={queue.error} />
      {queue.isPending ? (
        <div className="panel">
          <Loading what="Loading sends waiting for approval" />
        </div>
      ) : !shown.length ? (
        <div className="panel" data-testid="approvals-empty">
          <Empty>Nothing waits for your approval.</Empty>
        </div>
      ) : (
        <ul className={styles.queue} aria-label="Sends waiting for approval">
          {shown.map((item) => {
            const who = item.chat ? (item.chat.name ?? item.chat.identifier) : ((item.payload as { to?: string } | null)?.to ?? "—");
            const what = item.reaction
              ? `the reaction ${item.reaction.type}`
              : item.text
                ? `the message ${quote(item.text)}`
                : item.attachments.length
                  ? `the attachment ${item.attachments[0]!.filename}`
                  : "the send";
            const line = item.line.label ? `${item.line.label} (${item.line.handle})` : item.line.handle;
            return (
              <li key={item.id} className={styles.card} data-testid="approval" aria-label={`To ${who}: ${what}`}>
                <div className={styles.cardHead}>
                  <h2 className={styles.cardTitle}>
                    To {who}
                    {item.chat?.is_group ? <span className="small muted"> · group of {item.chat.participants.length}</span> : null}
                  </h2>
                  <span className="small muted">
                    Asked <When ms={item.created_at} show="relative" />
                  </span>
                </div>
                <dl className={styles.facts}>
                  <div>
                    <dt>Key</dt>
                    <dd>
                      {item.api_key?.name ?? "a key since deleted"}
                      {item.api_key?.prefix ? <span className="mono muted"> {item.api_key.prefix}</span> : null}
                    </dd>
                  </div>
                  <div>
                    <dt>Line</dt>
                    <dd>{line}</dd>
                  </div>
                  {item.chat && item.chat.identifier !== who ? (
                    <div>
                      <dt>Contact</dt>
                      <dd className="mono">{item.chat.identifier}</dd>
                    </div>
                  ) : null}
                </dl>
                <div className={styles.columns}>
                  <section className={styles.section} aria-label={`Recent messages with ${who}`}>
                    <h3 className={styles.sectionTitle}>Recent messages</h3>
                    <div className={styles.context}>
                      {item.context.length ? (
                        item.context.map((m) => (
                          <div key={m.id} className={`bubble${m.is_from_me ? " me" : ""}`}>
                            {m.text ? <div>{m.text}</div> : <div className="small">{m.is_audio_message ? "Voice memo" : m.attachments ? `📎 ${m.attachments} attachment${m.attachments > 1 ? "s" : ""}` : "(empty)"}</div>}
                            <div className="meta">
                              {m.is_from_me ? "You" : m.sender} · <Time ms={m.sent_at} short />
                            </div>
                          </div>
                        ))
                      ) : (
                        <span className="small muted">No messages yet: this send would start the conversation.</span>
                      )}
                    </div>
                    {item.chat ? (
                      <Link className="small" href={`/dashboard/chats/${item.chat.id}`}>
                        Open the whole conversation
                      </Link>
                    ) : null}
                  </section>
                  <section className={styles.section} aria-label="Wants to send">
                    <h3 className={styles.sectionTitle}>Wants to send</h3>
                    <div className={`bubble me ${sending.heldBubble} ${styles.proposal}`} data-testid="proposal">
                      {item.reaction ? (
                        <div>
                          <span aria-hidden="true">{REACTION_EMOJI[item.reaction.type] ?? ""} </span>
                          {item.reaction.added ? "React" : "Remove the reaction"} <strong>{item.reaction.type}</strong>
                          {item.reaction.message_text ? <> to {quote(item.reaction.message_text, 60)}</> : null}
                        </div>
                      ) : null}
                      {item.text ? <div>{item.text}</div> : null}
                      {item.attachments.length ? (
                        <ul className={styles.attachments} aria-label="Attachments">
                          {item.attachments.map((a) => (
                            <li key={a.id}>📎 {a.filename}</li>
                          ))}
                        </ul>
                      ) : null}
                      {item.is_audio_message ? <div className="small">Voice memo</div> : null}
                    </div>
                    {item.send_at ? (
                      <div className="small">
                        Asks to go <When ms={item.send_at} />
                      </div>
                    ) : null}
                    <div className={styles.decide}>
                      <ApprovalActions
                        id={item.id}
                        what={`${what} to ${who}`}
                        onDone={(decision) => {
                          setReviewed((r) => [{ id: item.id, decision, what, to: who, chatId: item.chat?.id ?? null }, ...r].slice(0, 10));
                          refresh();
                        }}
                      />
                    </div>
                  </section>
                </div>
              </li>
            );
          })}
        </ul>
      )}
      {queue.hasNextPage ? (
        <p>
          <button type="button" onClick={() => void queue.fetchNextPage()} disabled={queue.isFetchingNextPage}>
            {queue.isFetchingNextPage ? "Loading…" : "Load more"}
          </button>
        </p>
      ) : null}
      {reviewed.length ? (
        <div className="panel" style={{ marginTop: "1rem" }}>
          <h2>Reviewed just now</h2>
          <ul className={styles.reviewed} aria-label="Reviewed just now">
            {reviewed.map((r) => (
              <ReviewedItem key={r.id} r={r} />
            ))}
          </ul>
        </div>
      ) : null}
    </>
  );
}

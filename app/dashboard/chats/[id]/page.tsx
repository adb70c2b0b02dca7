"use client";
import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useParams } from "next/navigation";
import { useEffect, useRef, useState } from "react";
import { MessageBubble, UnsentBubble } from "@/components/chat-bubbles";
import { ChatComposer, type ReplyTarget } from "@/components/chat-composer";
import { Takeover } from "@/components/chat-takeover";
import { useLiveSubscription } from "@/components/live-subscription";
import { Empty, ErrorText, Loading } from "@/components/widgets";
import agents from "@/components/approvals.module.css";
import { useTRPC } from "@/lib/trpc";

// One conversation: its messages and, from the database, its sends that have no message yet,
// in time order; kept current live; a reply box; Pause of automated sending while a person answers.

const MESSAGES_LIVE = `subscription($from: String, $to: String) { messageReceived(from: $from, to: $to) { id } }`;
const OUTBOX_LIVE = `subscription($from: String, $to: String) { outboxItemUpdated(from: $from, to: $to) { status outboxId } }`;
const ACTIVITY_LIVE = `subscription($from: String, $to: String) { chatActivity(from: $from, to: $to) { kind typing } }`;
/** A typing indicator nobody stops goes away after this long (as Messages does). */
const TYPING_SHOWN_MS = 60_000;

export default function ConversationPage() {
  const { id } = useParams<{ id: string }>();
  const trpc = useTRPC();
  const qc = useQueryClient();
  const chat = useQuery(trpc.chats.get.queryOptions({ id }));
  const messages = useInfiniteQuery(
    trpc.chats.messages.infiniteQueryOptions(
      { chat_id: id, limit: 30 },
      // Live events bring messages, sends, reactions, receipts and delivery; the slow poll is a safety net.
      { getNextPageParam: (page) => page.next_cursor ?? undefined, refetchInterval: 60_000 },
    ),
  );
  const unsent = useQuery({ ...trpc.chats.unsent.queryOptions({ chat_id: id }), refetchInterval: 60_000 });
  const awaiting = (unsent.data ?? []).some((u) => u.hold_reason === "approval");
  const approvals = useQuery({ ...trpc.outbox.approvals.queryOptions({ chat_id: id, limit: 100 }), enabled: awaiting });
  const askedBy = new Map((approvals.data?.data ?? []).map((a) => [a.id, a.api_key?.name ?? null]));
  const markRead = useMutation(trpc.chats.markRead.mutationOptions());
  const lineHandle = chat.data?.line_handle;
  const refresh = () => {
    void qc.invalidateQueries({ queryKey: trpc.chats.messages.pathKey() });
    void qc.invalidateQueries({ queryKey: trpc.chats.unsent.pathKey() });
    void qc.invalidateQueries({ queryKey: trpc.outbox.approvals.pathKey() });
    void qc.invalidateQueries({ queryKey: trpc.outbox.approvalCount.pathKey() });
  };
  const vars = lineHandle ? { from: lineHandle, to: id } : null;
  useLiveSubscription(MESSAGES_LIVE, vars ?? {}, () => {
    refresh();
    markRead.mutate({ id });
  });
  useLiveSubscription(OUTBOX_LIVE, vars ?? {}, refresh);
  const [typingUntil, setTypingUntil] = useState(0);
  useLiveSubscription(ACTIVITY_LIVE, vars ?? {}, (data) => {
    const activity = data.chatActivity as { kind: string; typing: boolean | null } | undefined;
    if (activity?.kind === "typing") setTypingUntil(activity.typing ? Date.now() + TYPING_SHOWN_MS : 0);
    else refresh();
  });
  useEffect(() => {
    if (!typingUntil) return;
    const t = setTimeout(() => setTypingUntil(0), Math.max(0, typingUntil - Date.now()));
    return () => clearTimeout(t);
  }, [typingUntil]);
  const opened = useRef(false);
  useEffect(() => {
    if (opened.current) return;
    opened.current = true;
    markRead.mutate({ id });
  }, [id, markRead]);

  const rows = messages.data?.pages.flatMap((p) => p.data) ?? [];
  const oldestShown = messages.hasNextPage ? (rows[rows.length - 1]?.sent_at ?? 0) : 0;
  // A canceled send was the owner's own decision: it leaves the conversation (the outbox keeps it).
  const waiting = (unsent.data ?? []).filter((u) => u.created_at >= oldestShown && !(u.status === "failed" && u.error === "canceled"));
  type Item = { at: number; kind: "message"; m: (typeof rows)[number] } | { at: number; kind: "unsent"; u: (typeof waiting)[number] };
  const items: Item[] = [...rows.map((m) => ({ at: m.sent_at, kind: "message" as const, m })), ...waiting.map((u) => ({ at: Math.max(u.created_at, u.not_before ?? 0), kind: "unsent" as const, u }))].sort(
    (a, b) => b.at - a.at,
  );

  const retry = useMutation(trpc.chats.retry.mutationOptions({ onSuccess: refresh }));
  const [replyTo, setReplyTo] = useState<ReplyTarget | null>(null);

  const c = chat.data;
  return (
    <>
      <p className="small">
        <Link href={lineHandle ? `/dashboard/chats?line=${encodeURIComponent(lineHandle)}` : "/dashboard/chats"}>← Inbox</Link>
      </p>
      <div className={agents.titleRow}>
        <div style={{ minWidth: 0 }}>
          <h1>{c ? (c.name ?? c.identifier) : "Conversation"}</h1>
          {c ? (
            <p className="muted small" style={{ marginTop: 0 }}>
              {c.is_group ? `Group: ${c.participants.join(", ")}` : c.identifier} · on {c.line_handle} · {c.service === "imessage" ? "iMessage" : c.service.toUpperCase()}
            </p>
          ) : null}
        </div>
        {c ? <Takeover chatId={id} placement="button" /> : null}
      </div>
      {c ? <Takeover chatId={id} placement="banner" /> : null}
      <div className="panel">
        <ErrorText error={chat.error ?? messages.error ?? unsent.error} />
        {messages.isPending ? (
          <Loading what="Loading messages" />
        ) : (
          <div className="conversation" aria-live="polite" data-testid="conversation">
            {typingUntil ? (
              <div className="bubble typing" data-testid="typing" aria-label={`${c?.name ?? c?.identifier ?? "The contact"} is typing`}>
                <span aria-hidden="true">•••</span>
              </div>
            ) : null}
            {items.map((item) =>
              item.kind === "unsent" ? (
                <UnsentBubble
                  key={item.u.outbox_id}
                  u={item.u}
                  askedBy={askedBy.get(item.u.outbox_id)}
                  onRetry={() => retry.mutate({ id: item.u.outbox_id })}
                  retrying={retry.isPending}
                  onDone={refresh}
                />
              ) : (
                <MessageBubble key={item.m.id} m={item.m} onReply={() => setReplyTo({ id: item.m.id, text: item.m.text })} />
              ),
            )}
            {!items.length ? <Empty>No messages yet.</Empty> : null}
          </div>
        )}
        {messages.hasNextPage ? (
          <button type="button" onClick={() => void messages.fetchNextPage()} disabled={messages.isFetchingNextPage}>
            Load older
          </button>
        ) : null}
      </div>
      <ChatComposer chatId={id} lineHandle={lineHandle} replyTo={replyTo} onReplyTo={setReplyTo} onSent={refresh} retryError={retry.error} />
    </>
  );
}

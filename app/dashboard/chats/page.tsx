"use client";
import { useInfiniteQuery, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useRouter, useSearchParams } from "next/navigation";
import { Suspense, useEffect, useState } from "react";
import { useDashboardSettings } from "@/components/dashboard-settings";
import { LiveStatus, useLiveSubscription } from "@/components/live-subscription";
import { LineFilter, useLines } from "@/components/lines";
import { Empty, ErrorText, Loading, StatusBadge, Time } from "@/components/widgets";
import { useTRPC } from "@/lib/trpc";

// The inbox: every line's chats (or one line's), newest first, with the last message, unread
// counts and the last send's state, kept current live; and full-text search over messages.

const MESSAGES_LIVE = `subscription { messageReceived { id chatId } }`;
const OUTBOX_LIVE = `subscription { outboxItemUpdated { status outboxId } }`;
const DELIVERY_LIVE = `subscription { chatActivity { kind } }`;

/** A name's first letter; a number's last two digits. */
const initials = (who: string) => (/^[+\d]/.test(who) ? who.slice(-2) : who.slice(0, 1).toUpperCase());

/** Waits `ms` after the last change of `value`. */
function useDebounced<T>(value: T, ms = 250): T {
  const [v, setV] = useState(value);
  useEffect(() => {
    const t = setTimeout(() => setV(value), ms);
    return () => clearTimeout(t);
  }, [value, ms]);
  return v;
}

function MessageResults({ query, line }: { query: string; line: string }) {
  const trpc = useTRPC();
  const results = useQuery(trpc.search.messages.queryOptions({ query, line: line || undefined, limit: 25 }));
  if (results.isPending) return <Loading what="Searching" />;
  if (results.error) return <ErrorText error={results.error} />;
  if (!results.data.data.length) return <Empty>No message contains “{query}”.</Empty>;
  return (
    <ul className="inbox-list" aria-label="Messages found">
      {results.data.data.map((m) => (
        <li key={m.id}>
          <Link href={`/dashboard/chats/${m.chat_id}?message=${m.id}`}>
            <div className="row spread">
              <strong>{m.is_from_me ? "You" : m.sender}</strong>
              <span className="small muted">
                <Time ms={m.sent_at} />
              </span>
            </div>
            <div className="preview">{m.text}</div>
          </Link>
        </li>
      ))}
    </ul>
  );
}

function Inbox() {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const router = useRouter();
  const params = useSearchParams();
  const { simulator } = useDashboardSettings();
  const lines = useLines();
  const line = params.get("line") ?? "";
  const [search, setSearch] = useState(params.get("q") ?? "");
  const [mode, setMode] = useState<"chats" | "messages">(params.get("in") === "messages" ? "messages" : "chats");
  const term = useDebounced(search.trim());
  const chats = useInfiniteQuery(
    trpc.chats.inbox.infiniteQueryOptions(
      { line: line || undefined, limit: 25, search: mode === "chats" && term ? term : undefined },
      { getNextPageParam: (page) => page.next_cursor ?? undefined },
    ),
  );
  const refresh = () => void qc.invalidateQueries({ queryKey: trpc.chats.inbox.pathKey() });
  const live = useLiveSubscription(MESSAGES_LIVE, {}, refresh);
  useLiveSubscription(OUTBOX_LIVE, {}, refresh);
  useLiveSubscription(DELIVERY_LIVE, {}, (data) => (data.chatActivity as { kind?: string } | undefined)?.kind === "delivery" && refresh());
  const rows = chats.data?.pages.flatMap((p) => p.data) ?? [];
  const showLine = !line && lines.lines.length > 1;

  return (
    <>
      <div className="row spread">
        <h1>Inbox</h1>
        <LiveStatus state={live} />
      </div>
      <div className="panel row inbox-filters">
        <LineFilter lines={lines.lines} value={line} onChange={(h) => router.replace(`/dashboard/chats${h ? `?line=${encodeURIComponent(h)}` : ""}`)} />
        <label style={{ flex: "1 1 14rem" }}>
          Search
          <input
            type="search"
            value={search}
            onChange={(e) => setSearch(e.target.value)}
            placeholder={mode === "chats" ? "Phone number, email or group name" : "Words in a message"}
            maxLength={200}
          />
        </label>
        <fieldset className="segmented">
          <legend className="visually-hidden">Search in</legend>
          <label className="check">
            <input type="radio" name="in" checked={mode === "chats"} onChange={() => setMode("chats")} /> Chats
          </label>
          <label className="check">
            <input type="radio" name="in" checked={mode === "messages"} onChange={() => setMode("messages")} /> Messages
          </label>
        </fieldset>
      </div>
      <div className="panel">
        {mode === "messages" && term ? (
          <MessageResults query={term} line={line} />
        ) : (
          <>
            <ErrorText error={lines.error ?? chats.error} />
            {chats.isPending ? (
              <Loading what="Loading chats" />
            ) : !rows.length ? (
              <Empty>
                {term ? (
                  "No chat matches."
                ) : !lines.lines.length ? (
                  <>
                    No lines yet. <Link href="/dashboard/lines">Add a line</Link> to start receiving messages.
                  </>
                ) : simulator ? (
                  <>
                    No conversations yet. Text a line from the <Link href="/dashboard/simulator">simulator</Link>, or from a phone to a connected line.
                  </>
                ) : (
                  <>
                    No conversations yet. Messages people send to your lines appear here; <Link href="/dashboard/lines">check that a line is connected</Link>.
                  </>
                )}
              </Empty>
            ) : (
              <ul className="inbox-list" aria-label="Conversations">
                {rows.map((c) => (
                  <li key={c.id}>
                    <Link href={`/dashboard/chats/${c.id}`} className={c.unread_count ? "unread" : undefined}>
                      <span className="avatar" aria-hidden="true">
                        {initials(c.name ?? c.identifier)}
                      </span>
                      <span className="inbox-body">
                        <span className="row spread">
                          <strong className="inbox-name">{c.name ?? c.identifier}</strong>
                          <span className="small muted">
                            <Time ms={c.last_message_at} short />
                          </span>
                        </span>
                        <span className="row spread">
                          <span className="preview">
                            {c.last_send ? (
                              <>
                                <StatusBadge status={c.last_send.status === "claimed" ? "sending" : c.last_send.status} />{" "}
                              </>
                            ) : c.last_message?.is_from_me ? (
                              "You: "
                            ) : null}
                            {c.last_message?.preview ?? (c.has_received_inbound ? "" : "Has not messaged yet")}
                          </span>
                          {c.unread_count ? (
                            <span className="unread-count" aria-label={`${c.unread_count} unread`}>
                              {c.unread_count}
                            </span>
                          ) : null}
                        </span>
                        <span className="small muted">
                          {c.is_group ? `Group · ${c.participants.length} people` : c.service === "imessage" ? "iMessage" : c.service.toUpperCase()}
                          {showLine ? ` · ${c.line_label ?? c.line_handle}` : ""}
                          {c.last_message?.is_from_me && c.last_message.delivery_status && !c.last_send ? ` · ${c.last_message.delivery_status}` : ""}
                        </span>
                      </span>
                    </Link>
                  </li>
                ))}
              </ul>
            )}
            {chats.hasNextPage ? (
              <button type="button" onClick={() => void chats.fetchNextPage()} disabled={chats.isFetchingNextPage}>
                {chats.isFetchingNextPage ? "Loading…" : "Load more"}
              </button>
            ) : null}
          </>
        )}
      </div>
    </>
  );
}

export default function InboxPage() {
  return (
    <Suspense fallback={<Loading />}>
      <Inbox />
    </Suspense>
  );
}

"use client";
import { useInfiniteQuery, useMutation, useQueries, useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useParams } from "next/navigation";
import { type FormEvent, useState } from "react";
import { Empty, ErrorText, Loading, StatusBadge, Time } from "@/components/ui";
import { useTRPC } from "@/lib/trpc";

const REACTION_EMOJI: Record<string, string> = { love: "❤️", like: "👍", dislike: "👎", laugh: "😂", emphasize: "‼️", question: "❓" };

interface AttachmentView {
  id: string;
  filename: string;
  mime_type: string;
  url: string;
  transcription: string | null;
}

function Attachment({ a, audio }: { a: AttachmentView; audio: boolean }) {
  if (a.mime_type.startsWith("image/")) return <img src={a.url} alt={a.filename} loading="lazy" />;
  if (audio || a.mime_type.startsWith("audio/")) {
    return (
      <div>
        <audio controls preload="none" src={a.url} aria-label={`Voice memo ${a.filename}`} />
        <div className="small">{a.transcription ? `“${a.transcription}”` : audio ? "(no transcription yet)" : null}</div>
      </div>
    );
  }
  return (
    <div>
      <a href={a.url} style={{ color: "inherit" }}>
        📎 {a.filename}
      </a>
    </div>
  );
}

export default function ConversationPage() {
  const { id } = useParams<{ id: string }>();
  const trpc = useTRPC();
  const messages = useInfiniteQuery(
    trpc.chats.messages.infiniteQueryOptions(
      { chat_id: id, limit: 30 },
      { getNextPageParam: (page) => page.next_cursor ?? undefined, refetchInterval: 2_000 },
    ),
  );
  const chat = messages.data?.pages[0]?.chat;
  const rows = messages.data?.pages.flatMap((p) => p.data) ?? [];
  const [sent, setSent] = useState<{ id: string; text: string }[]>([]);
  const send = useMutation(trpc.chats.send.mutationOptions());
  // Outgoing items not yet delivered: their status until the message appears.
  const shownOutbox = new Set(rows.map((m) => m.outbox_id).filter(Boolean));
  const waiting = sent.filter((s) => !shownOutbox.has(s.id));
  const statuses = useQueries({
    queries: waiting.map((s) => ({ ...trpc.outbox.get.queryOptions({ id: s.id }), refetchInterval: 1_000 })),
  });
  const [text, setText] = useState("");
  const [replyTo, setReplyTo] = useState<{ id: string; text: string | null } | null>(null);
  const line = useQuery({ ...trpc.chats.get.queryOptions({ id }), enabled: !chat });
  const lineHandle = chat?.line_handle ?? line.data?.line_handle;

  function submit(e: FormEvent) {
    e.preventDefault();
    if (!lineHandle || !text.trim()) return;
    send.mutate(
      { from: lineHandle, to: id, text, reply_to: replyTo?.id ?? null },
      {
        onSuccess: (item) => {
          setSent((s) => [...s, { id: item.id, text }]);
          setText("");
          setReplyTo(null);
        },
      },
    );
  }

  return (
    <>
      <p className="small">
        <Link href={lineHandle ? `/dashboard/chats?line=${encodeURIComponent(lineHandle)}` : "/dashboard/chats"}>← Chats</Link>
      </p>
      <h1>{chat ? (chat.name ?? chat.identifier) : "Conversation"}</h1>
      {chat ? (
        <p className="muted small">
          {chat.is_group ? `Group: ${chat.participants.join(", ")}` : chat.identifier} · on {chat.line_handle} · {chat.service}
        </p>
      ) : null}
      <div className="panel">
        <ErrorText error={messages.error} />
        {messages.isPending ? (
          <Loading what="Loading messages" />
        ) : (
          <div className="conversation" aria-live="polite" data-testid="conversation">
            {waiting.map((s, i) => {
              const item = statuses[i]?.data;
              return (
                <div key={s.id} className="bubble me">
                  {s.text}
                  <div className="meta">
                    <StatusBadge status={item?.status ?? "pending"} />
                    {item?.error ? <span> {item.error}</span> : null}
                  </div>
                </div>
              );
            })}
            {rows.map((m) => (
              <div key={m.id} className={`bubble${m.is_from_me ? " me" : ""}`} data-testid="message">
                {m.reply_to ? <div className="reply">{m.reply_to.text ?? "(attachment)"}</div> : null}
                {m.text ? <div>{m.text}</div> : null}
                {m.attachments.map((a) => (
                  <Attachment key={a.id} a={a} audio={m.is_audio_message === true} />
                ))}
                {m.reactions.length ? (
                  <div className="reactions" aria-label="Reactions">
                    {m.reactions.map((r) => (
                      <span key={r.id} title={`${r.type} from ${r.sender}`}>
                        {REACTION_EMOJI[r.type] ?? r.type}
                      </span>
                    ))}
                  </div>
                ) : null}
                <div className="meta">
                  {m.is_from_me ? "sent" : m.sender} · <Time ms={m.sent_at} />{" "}
                  <button type="button" className="small" style={{ padding: "0 0.4rem" }} onClick={() => setReplyTo({ id: m.id, text: m.text })}>
                    Reply
                  </button>
                </div>
              </div>
            ))}
            {!rows.length && !waiting.length ? <Empty>No messages yet.</Empty> : null}
          </div>
        )}
        {messages.hasNextPage ? (
          <button type="button" onClick={() => void messages.fetchNextPage()} disabled={messages.isFetchingNextPage}>
            Load older
          </button>
        ) : null}
      </div>
      <form className="panel stack" onSubmit={submit} aria-label="Send a message">
        {replyTo ? (
          <div className="row small">
            Replying to “{replyTo.text ?? "attachment"}”
            <button type="button" onClick={() => setReplyTo(null)}>
              Cancel
            </button>
          </div>
        ) : null}
        <label>
          Message
          <textarea rows={2} value={text} onChange={(e) => setText(e.target.value)} maxLength={20_000} placeholder="Write a reply" />
        </label>
        <ErrorText error={send.error} />
        <div>
          <button className="primary" type="submit" disabled={send.isPending || !text.trim() || !lineHandle}>
            Send
          </button>
        </div>
      </form>
    </>
  );
}

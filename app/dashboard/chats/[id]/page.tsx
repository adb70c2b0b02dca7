"use client";
import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useParams } from "next/navigation";
import { type FormEvent, useEffect, useId, useRef, useState } from "react";
import { ApprovalActions, HOLD_LABEL, type HoldReason, PendingActions } from "@/components/holds";
import { useLiveSubscription } from "@/components/live";
import { Empty, ErrorText, Loading, Time } from "@/components/ui";
import { parseLocalInput, toLocalInput, When } from "@/components/when";
import styles from "@/components/sending.module.css";
import agents from "@/components/approvals.module.css";
import { useTRPC } from "@/lib/trpc";

// One conversation: its messages and, from the database, its sends that have no message yet
// (sending; scheduled or otherwise held, with when it goes, Reschedule and Cancel; waiting for
// approval, with the key that asked, Approve and Reject; or failed with the reason and a Retry),
// in time order; kept current live; a reply box with an attachment, "reply to" and "Send later".
// Pause stops automated sending here (keys with guardrails) while a person answers; a banner
// says who paused it and since when, with Resume.

const REACTION_EMOJI: Record<string, string> = { love: "❤️", like: "👍", dislike: "👎", laugh: "😂", emphasize: "‼️", question: "❓" };
const MESSAGES_LIVE = `subscription($from: String, $to: String) { messageReceived(from: $from, to: $to) { id } }`;
const OUTBOX_LIVE = `subscription($from: String, $to: String) { outboxItemUpdated(from: $from, to: $to) { status outboxId } }`;
const ACTIVITY_LIVE = `subscription($from: String, $to: String) { chatActivity(from: $from, to: $to) { kind typing } }`;
/** A typing indicator nobody stops goes away after this long (as Messages does). */
const TYPING_SHOWN_MS = 60_000;
const UPLOAD_HEADER = "x-relay-dashboard";

interface AttachmentView {
  id: string;
  filename: string;
  mime_type: string;
  url: string;
  transcription: string | null;
}

/** Pause and Resume of automated sending in the chat, and the banner while it is paused. */
function Takeover({ chatId, placement }: { chatId: string; placement: "button" | "banner" }) {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const takeover = useQuery({ ...trpc.chats.takeover.queryOptions({ id: chatId }), refetchInterval: 60_000 });
  const refresh = () => {
    void qc.invalidateQueries({ queryKey: trpc.chats.takeover.queryKey({ id: chatId }) });
    void qc.invalidateQueries({ queryKey: trpc.chats.get.queryKey({ id: chatId }) });
  };
  const pause = useMutation(trpc.chats.pause.mutationOptions({ onSuccess: refresh }));
  const resume = useMutation(trpc.chats.resume.mutationOptions({ onSuccess: refresh }));
  const t = takeover.data;
  if (!t) return null;
  if (placement === "button") {
    return t.paused_at ? null : (
      <div className="stack" style={{ gap: "0.25rem", alignItems: "flex-end" }}>
        <button type="button" onClick={() => pause.mutate({ id: chatId })} disabled={pause.isPending} title="Keys with guardrails (AI agents) may not send here until you resume; your own replies still go.">
          {pause.isPending ? "Pausing…" : "Pause automated sending"}
        </button>
        <ErrorText error={pause.error} />
      </div>
    );
  }
  if (!t.paused_at) return null;
  const by = t.paused_by;
  return (
    <div className={agents.banner} role="status" data-testid="paused-banner">
      <div className={agents.bannerText}>
        <strong>Automated sending is paused</strong>
        <span className="small">
          Paused by {by ? (by.kind === "api_key" ? <>the key “{by.name}”</> : by.name) : "someone"} <When ms={t.paused_at} show="relative" /> (
          <Time ms={t.paused_at} />
          ). Keys with guardrails may not send to this chat; your own replies still go.
        </span>
        <ErrorText error={resume.error} />
      </div>
      <button type="button" className="primary" onClick={() => resume.mutate({ id: chatId })} disabled={resume.isPending}>
        {resume.isPending ? "Resuming…" : "Resume"}
      </button>
    </div>
  );
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
      <a href={a.url} className="attachment-link">
        📎 {a.filename}
      </a>
    </div>
  );
}

const DELIVERY: Record<string, string> = { delivered: "Delivered", sent: "Sent", undelivered: "Not delivered", failed: "Failed" };

async function uploadFile(file: File): Promise<string> {
  const res = await fetch("/api/dashboard/files", {
    method: "POST",
    headers: { "content-type": file.type || "application/octet-stream", "x-filename": file.name, [UPLOAD_HEADER]: "1" },
    body: file,
  });
  const body = (await res.json()) as { id?: string; error?: { message: string; code: string }; request_id?: string };
  if (!res.ok || !body.id) throw Object.assign(new Error(body.error?.message ?? `Upload failed (${res.status})`), { data: { code: body.error?.code, requestId: body.request_id } });
  return body.id;
}

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
  // Which key asked, for the sends that wait for approval.
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
  // Opening the chat reads it.
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

  const send = useMutation(trpc.chats.send.mutationOptions({ onSuccess: refresh }));
  const retry = useMutation(trpc.chats.retry.mutationOptions({ onSuccess: refresh }));
  const [text, setText] = useState("");
  const [file, setFile] = useState<File | null>(null);
  const [uploading, setUploading] = useState(false);
  const [uploadError, setUploadError] = useState<Error | null>(null);
  const fileInput = useRef<HTMLInputElement>(null);
  const [replyTo, setReplyTo] = useState<{ id: string; text: string | null } | null>(null);
  const [later, setLater] = useState(false);
  const [laterAt, setLaterAt] = useState("");
  const [laterProblem, setLaterProblem] = useState<string | null>(null);
  const laterId = useId();

  async function submit(e: FormEvent) {
    e.preventDefault();
    if (!lineHandle || (!text.trim() && !file)) return;
    setUploadError(null);
    let sendAt: number | null = null;
    if (later) {
      const parsed = parseLocalInput(laterAt);
      if ("error" in parsed) return setLaterProblem(parsed.error);
      sendAt = parsed.ms;
    }
    setLaterProblem(null);
    let attachments: string[] = [];
    if (file) {
      setUploading(true);
      try {
        attachments = [await uploadFile(file)];
      } catch (err) {
        setUploadError(err as Error);
        return;
      } finally {
        setUploading(false);
      }
    }
    send.mutate(
      { from: lineHandle, to: id, text: text.trim() ? text : null, attachments, reply_to: replyTo?.id ?? null, send_at: sendAt },
      {
        onSuccess: () => {
          setText("");
          setFile(null);
          if (fileInput.current) fileInput.current.value = "";
          setReplyTo(null);
          setLater(false);
          setLaterAt("");
        },
      },
    );
  }

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
                <div
                  key={item.u.outbox_id}
                  className={`bubble me${item.u.status === "failed" ? " failed" : item.u.hold_reason ? ` ${styles.heldBubble}` : " pending"}`}
                  data-testid="unsent"
                >
                  {item.u.text ? <div>{item.u.text}</div> : null}
                  {item.u.attachments ? <div className="small">📎 {item.u.attachments} attachment</div> : null}
                  <div className="meta">
                    {item.u.status === "failed" && item.u.error === "rejected" ? (
                      <>
                        <strong>Rejected</strong> · <Time ms={item.u.completed_at ?? item.u.created_at} />
                        <div className="reason">Not sent: you rejected it.</div>
                      </>
                    ) : item.u.status === "failed" ? (
                      <>
                        <strong>Not sent</strong> · <Time ms={item.u.completed_at ?? item.u.created_at} />
                        <div className="reason">{item.u.error}</div>
                        <button type="button" className="bubble-action" onClick={() => retry.mutate({ id: item.u.outbox_id })} disabled={retry.isPending}>
                          Retry
                        </button>
                      </>
                    ) : item.u.hold_reason === "approval" ? (
                      <>
                        <span aria-hidden="true">◷ </span>
                        <strong>Waiting for your approval</strong>
                        {askedBy.get(item.u.outbox_id) ? <> · asked by the key “{askedBy.get(item.u.outbox_id)}”</> : null} · <Time ms={item.u.created_at} />
                        <div>
                          <ApprovalActions
                            compact
                            id={item.u.outbox_id}
                            what={`the message${item.u.text ? ` “${item.u.text.length > 40 ? `${item.u.text.slice(0, 39)}…` : item.u.text}”` : ""}`}
                            onDone={refresh}
                          />
                        </div>
                      </>
                    ) : item.u.hold_reason ? (
                      <>
                        <span aria-hidden="true">◷ </span>
                        {item.u.hold_reason === "scheduled" ? (
                          <strong>Scheduled for </strong>
                        ) : (
                          <strong>Waiting: {HOLD_LABEL[item.u.hold_reason as HoldReason] ?? item.u.hold_reason} · goes </strong>
                        )}
                        {item.u.not_before ? (
                          <>
                            <When ms={item.u.not_before} show="absolute" /> (<When ms={item.u.not_before} show="relative" />)
                          </>
                        ) : (
                          "when the line may send"
                        )}
                        <div>
                          <PendingActions
                            compact
                            id={item.u.outbox_id}
                            notBefore={item.u.not_before}
                            what={`the message${item.u.text ? ` “${item.u.text.length > 40 ? `${item.u.text.slice(0, 39)}…` : item.u.text}”` : ""}`}
                            onDone={refresh}
                          />
                        </div>
                      </>
                    ) : (
                      <>
                        Sending… · <Time ms={item.u.created_at} />
                      </>
                    )}
                  </div>
                </div>
              ) : (
                <div key={item.m.id} className={`bubble${item.m.is_from_me ? " me" : ""}`} data-testid="message">
                  {item.m.reply_to ? <div className="reply">{item.m.reply_to.text ?? "(attachment)"}</div> : null}
                  {item.m.text ? <div>{item.m.text}</div> : null}
                  {item.m.attachments.map((a) => (
                    <Attachment key={a.id} a={a} audio={item.m.is_audio_message === true} />
                  ))}
                  {item.m.reactions.length ? (
                    <div className="reactions" aria-label="Reactions">
                      {item.m.reactions.map((r) => (
                        <span key={r.id} title={`${r.type} from ${r.sender}`}>
                          {REACTION_EMOJI[r.type] ?? r.type}
                        </span>
                      ))}
                    </div>
                  ) : null}
                  <div className="meta">
                    {item.m.is_from_me ? (item.m.delivery_status ? DELIVERY[item.m.delivery_status] : "Sent") : item.m.sender} · <Time ms={item.m.sent_at} />
                    {item.m.is_from_me && item.m.delivery_error ? <div className="reason">{item.m.delivery_error}</div> : null}
                    <button type="button" className="bubble-action" onClick={() => setReplyTo({ id: item.m.id, text: item.m.text })} aria-label={`Reply to ${item.m.text ?? "attachment"}`}>
                      Reply
                    </button>
                  </div>
                </div>
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
      <form className="panel stack" onSubmit={(e) => void submit(e)} aria-label="Send a message" noValidate>
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
        <label>
          Attachment (optional)
          <input ref={fileInput} type="file" onChange={(e) => setFile(e.target.files?.[0] ?? null)} />
        </label>
        <div className={styles.later}>
          <label className="check">
            <input
              type="checkbox"
              checked={later}
              onChange={(e) => {
                setLater(e.target.checked);
                setLaterProblem(null);
                if (e.target.checked && !laterAt) setLaterAt(toLocalInput(Date.now() + 3_600_000));
              }}
            />
            Send later
          </label>
          {later ? (
            <div className={styles.field}>
              <label htmlFor={laterId}>Send at</label>
              <input
                id={laterId}
                type="datetime-local"
                value={laterAt}
                min={toLocalInput(Date.now())}
                onChange={(e) => setLaterAt(e.target.value)}
                aria-invalid={laterProblem ? true : undefined}
                aria-describedby={`${laterId}-note`}
              />
              <div id={`${laterId}-note`} className="small">
                {laterProblem ? (
                  <span className="error" role="alert">
                    {laterProblem}
                  </span>
                ) : (
                  <span className="muted">Your time ({Intl.DateTimeFormat().resolvedOptions().timeZone}). It waits in the outbox until then.</span>
                )}
              </div>
            </div>
          ) : null}
        </div>
        <ErrorText error={uploadError ?? send.error ?? retry.error} />
        <div>
          <button className="primary" type="submit" disabled={send.isPending || uploading || (!text.trim() && !file) || !lineHandle}>
            {uploading ? "Uploading…" : send.isPending ? (later ? "Scheduling…" : "Sending…") : later ? "Schedule" : "Send"}
          </button>
        </div>
      </form>
    </>
  );
}

"use client";
import type { inferRouterOutputs } from "@trpc/server";
import { ApprovalActions, HOLD_LABEL, type HoldReason, PendingActions } from "./holds";
import { Time } from "./widgets";
import { When } from "./when";
import type { AppRouter } from "@/server/transports/trpc/router";
import styles from "./sending.module.css";

type Outputs = inferRouterOutputs<AppRouter>["chats"];
type Message = Outputs["messages"]["data"][number];
type Unsent = Outputs["unsent"][number];

const REACTION_EMOJI: Record<string, string> = { love: "❤️", like: "👍", dislike: "👎", laugh: "😂", emphasize: "‼️", question: "❓" };
const DELIVERY: Record<string, string> = { delivered: "Delivered", sent: "Sent", undelivered: "Not delivered", failed: "Failed" };

function Attachment({ a, audio }: { a: Message["attachments"][number]; audio: boolean }) {
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

/** A message in the conversation, with its attachments, reactions, delivery and a Reply button. */
export function MessageBubble({ m, onReply }: { m: Message; onReply: () => void }) {
  return (
    <div className={`bubble${m.is_from_me ? " me" : ""}`} data-testid="message">
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
        {m.is_from_me ? (m.delivery_status ? DELIVERY[m.delivery_status] : "Sent") : m.sender} · <Time ms={m.sent_at} />
        {m.is_from_me && m.delivery_error ? <div className="reason">{m.delivery_error}</div> : null}
        <button type="button" className="bubble-action" onClick={onReply} aria-label={`Reply to ${m.text ?? "attachment"}`}>
          Reply
        </button>
      </div>
    </div>
  );
}

/**
 * A send with no message yet: sending; held (when it goes, Reschedule and Cancel); waiting for
 * approval (the key that asked, Approve and Reject); or failed, with the reason and Retry.
 */
export function UnsentBubble({ u, askedBy, onRetry, retrying, onDone }: { u: Unsent; askedBy: string | null | undefined; onRetry: () => void; retrying: boolean; onDone: () => void }) {
  const what = `the message${u.text ? ` “${u.text.length > 40 ? `${u.text.slice(0, 39)}…` : u.text}”` : ""}`;
  return (
    <div className={`bubble me${u.status === "failed" ? " failed" : u.hold_reason ? ` ${styles.heldBubble}` : " pending"}`} data-testid="unsent">
      {u.text ? <div>{u.text}</div> : null}
      {u.attachments ? <div className="small">📎 {u.attachments} attachment</div> : null}
      <div className="meta">
        {u.status === "failed" && u.error === "rejected" ? (
          <>
            <strong>Rejected</strong> · <Time ms={u.completed_at ?? u.created_at} />
            <div className="reason">Not sent: you rejected it.</div>
          </>
        ) : u.status === "failed" ? (
          <>
            <strong>Not sent</strong> · <Time ms={u.completed_at ?? u.created_at} />
            <div className="reason">{u.error}</div>
            <button type="button" className="bubble-action" onClick={onRetry} disabled={retrying}>
              Retry
            </button>
          </>
        ) : u.hold_reason === "approval" ? (
          <>
            <span aria-hidden="true">◷ </span>
            <strong>Waiting for your approval</strong>
            {askedBy ? <> · asked by the key “{askedBy}”</> : null} · <Time ms={u.created_at} />
            <div>
              <ApprovalActions compact id={u.outbox_id} what={what} onDone={onDone} />
            </div>
          </>
        ) : u.hold_reason ? (
          <>
            <span aria-hidden="true">◷ </span>
            {u.hold_reason === "scheduled" ? <strong>Scheduled for </strong> : <strong>Waiting: {HOLD_LABEL[u.hold_reason as HoldReason] ?? u.hold_reason} · goes </strong>}
            {u.not_before ? (
              <>
                <When ms={u.not_before} show="absolute" /> (<When ms={u.not_before} show="relative" />)
              </>
            ) : (
              "when the line may send"
            )}
            <div>
              <PendingActions compact id={u.outbox_id} notBefore={u.not_before} what={what} onDone={onDone} />
            </div>
          </>
        ) : (
          <>
            Sending… · <Time ms={u.created_at} />
          </>
        )}
      </div>
    </div>
  );
}

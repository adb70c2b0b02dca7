"use client";
import { useMutation } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { ConfirmDialog, Dialog, DialogFormActions } from "./dialog";
import { ErrorText } from "./widgets";
import { parseLocalInput, SendAtField, toLocalInput, When } from "./when";
import { useTRPC } from "@/lib/trpc";
import styles from "./sending.module.css";

// Held sends: a pending outbox item that may not go yet (hold_reason, not_before; see
// server/outbox/held-items.ts), the reason in words, when it goes, and Cancel / Reschedule; a send
// waiting for the owner's approval (a key with require_approval) has Approve / Reject instead.

export type HoldReason = "scheduled" | "quiet_hours" | "new_contact_budget" | "line_rate" | "line_unavailable" | "approval";

/** Each reason as the pages name it. */
export const HOLD_LABEL: Record<HoldReason, string> = {
  scheduled: "Scheduled",
  quiet_hours: "Quiet hours",
  new_contact_budget: "New-contact budget",
  line_rate: "Line pace",
  line_unavailable: "Line unavailable",
  approval: "Needs approval",
};

/** What each reason means, for a title or a note. */
export const HOLD_MEANING: Record<HoldReason, string> = {
  scheduled: "Sent later: it goes at the time it was scheduled for.",
  quiet_hours: "Inside the line's quiet hours: it goes when they end (a reply to someone who wrote in the last 30 minutes goes at once).",
  new_contact_budget: "It would open a conversation with a new contact and the line has opened as many as its policy allows for now.",
  line_rate: "Waiting its turn: the line sends at its set pace.",
  line_unavailable: "The line's provider is not answering: it goes when the line is back.",
  approval: "Sent by an API key that needs your approval for each send: it goes once you approve it, never if you reject it.",
};

const label = (reason: string) => HOLD_LABEL[reason as HoldReason] ?? reason;

/** The reason as a badge ("Scheduled", "Quiet hours", …). */
export function HoldBadge({ reason }: { reason: string }) {
  return (
    <span className={`badge ${styles.held}`} title={HOLD_MEANING[reason as HoldReason]} data-testid="hold-badge">
      <span aria-hidden="true">◷ </span>
      {label(reason)}
    </span>
  );
}

/** When a held item goes: "Sends in 2 hours · Tue, Dec 3, 2:30 PM CET", or why no time is known. */
export function HoldWhen({ reason, notBefore }: { reason: string; notBefore: number | null }) {
  // A time that has come (a due send waiting its turn on a paced line) says so instead of "just now".
  if (notBefore !== null && notBefore > Date.now() + 45_000) {
    return (
      <span>
        {reason === "scheduled" ? "Sends " : "Goes "}
        <When ms={notBefore} />
      </span>
    );
  }
  if (reason === "new_contact_budget") return <span>Waits until the line&rsquo;s budget is raised (a limit of 0)</span>;
  if (reason === "line_unavailable") return <span>Goes when the line is back</span>;
  if (reason === "line_rate") return <span>Goes at its turn</span>;
  if (reason === "approval") return <span>Goes once you approve it</span>;
  return <span>Due now</span>;
}

/** A pending item's Reschedule and Cancel buttons, each with its dialog. */
export function PendingActions({
  id,
  notBefore,
  what,
  onDone,
  compact = false,
}: {
  id: string;
  notBefore: number | null;
  /** The send in a few words, for the dialogs ("the message “see you”"). */
  what: string;
  onDone: () => void;
  /** Inside a message bubble: small buttons. */
  compact?: boolean;
}) {
  const trpc = useTRPC();
  const [asking, setAsking] = useState<"cancel" | "reschedule" | null>(null);
  const close = () => setAsking(null);
  const cancel = useMutation(trpc.outbox.cancel.mutationOptions({ onSuccess: () => (close(), onDone()) }));
  const buttonClass = compact ? "bubble-action" : styles.smallButton;
  return (
    <>
      <button type="button" className={buttonClass} onClick={() => (cancel.reset(), setAsking("reschedule"))} aria-label={`Reschedule ${what}`}>
        Reschedule
      </button>
      <button type="button" className={compact ? buttonClass : `danger ${styles.smallButton}`} onClick={() => (cancel.reset(), setAsking("cancel"))} aria-label={`Cancel ${what}`}>
        Cancel
      </button>
      <ConfirmDialog
        open={asking === "cancel"}
        title="Cancel this send?"
        confirm="Cancel send"
        dismiss="Keep it"
        danger
        busy={cancel.isPending}
        onConfirm={() => cancel.mutate({ id })}
        onClose={close}
      >
        <p>
          {what.charAt(0).toUpperCase() + what.slice(1)} will not be sent. It stays in the outbox as canceled.
        </p>
        <ErrorText error={cancel.error} />
      </ConfirmDialog>
      <Dialog open={asking === "reschedule"} onClose={close} title="Reschedule">
        <p className="small muted">{what.charAt(0).toUpperCase() + what.slice(1)}</p>
        <RescheduleForm id={id} notBefore={notBefore} onCancel={close} onDone={() => (close(), onDone())} />
      </Dialog>
    </>
  );
}

/**
 * Approve and Reject of a send waiting for approval, one click each. `onDone` gets the decision
 * once the server took it; a refusal (it was reviewed meanwhile) shows the server's sentence.
 */
export function ApprovalActions({
  id,
  what,
  onDone,
  compact = false,
}: {
  id: string;
  /** The send in a few words, for the buttons' accessible names ("the message “see you”"). */
  what: string;
  onDone: (decision: "approved" | "rejected") => void;
  compact?: boolean;
}) {
  const trpc = useTRPC();
  const approve = useMutation(trpc.outbox.approve.mutationOptions({ onSuccess: () => onDone("approved") }));
  const reject = useMutation(trpc.outbox.reject.mutationOptions({ onSuccess: () => onDone("rejected") }));
  const busy = approve.isPending || reject.isPending;
  return (
    <>
      <span className={compact ? undefined : styles.approvalButtons}>
        <button
          type="button"
          className={compact ? "bubble-action" : `primary ${styles.smallButton}`}
          onClick={() => (reject.reset(), approve.mutate({ id }))}
          disabled={busy}
          aria-label={`Approve ${what}`}
        >
          {approve.isPending ? "Approving…" : "Approve"}
        </button>
        <button
          type="button"
          className={compact ? "bubble-action" : `danger ${styles.smallButton}`}
          onClick={() => (approve.reset(), reject.mutate({ id }))}
          disabled={busy}
          aria-label={`Reject ${what}`}
        >
          {reject.isPending ? "Rejecting…" : "Reject"}
        </button>
      </span>
      <ErrorText error={approve.error ?? reject.error} />
    </>
  );
}

function RescheduleForm({ id, notBefore, onCancel, onDone }: { id: string; notBefore: number | null; onCancel: () => void; onDone: () => void }) {
  const trpc = useTRPC();
  const [value, setValue] = useState(() => toLocalInput(notBefore && notBefore > Date.now() ? notBefore : Date.now() + 3_600_000));
  const [problem, setProblem] = useState<string | null>(null);
  const reschedule = useMutation(trpc.outbox.reschedule.mutationOptions({ onSuccess: onDone }));
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  function submit(e: FormEvent) {
    e.preventDefault();
    const parsed = parseLocalInput(value);
    if ("error" in parsed) return setProblem(parsed.error);
    setProblem(null);
    reschedule.mutate({ id, send_at: parsed.ms });
  }
  return (
    <form className="stack" onSubmit={submit} noValidate>
      <SendAtField value={value} onChange={setValue} problem={problem} hint={`In your time zone (${zone}). It is held until then.`} required />
      <ErrorText error={reschedule.error} />
      <DialogFormActions submit="Reschedule" busy={reschedule.isPending} onCancel={onCancel} />
    </form>
  );
}

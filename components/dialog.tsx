"use client";
import { type ReactNode, useEffect, useId, useRef } from "react";
import styles from "./sending.module.css";

// A modal dialog (the browser's <dialog>: focus stays inside, Escape closes it, the page
// behind is inert), the buttons of a form in one, and a button that asks before it acts.

export function Dialog({ open, onClose, title, children }: { open: boolean; onClose: () => void; title: string; children: ReactNode }) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);
  return (
    <dialog
      ref={ref}
      className={styles.dialog}
      aria-labelledby={titleId}
      onClose={onClose}
      // A click on the backdrop (the dialog element itself, outside its content) closes it.
      onClick={(e) => e.target === ref.current && onClose()}
    >
      <div className={styles.dialogBody}>
        <h2 id={titleId}>{title}</h2>
        {open ? children : null}
      </div>
    </dialog>
  );
}

/** A confirmation: what will happen (children), the action, and `dismiss`, focused first. */
export function ConfirmDialog({
  open,
  title,
  children,
  confirm,
  dismiss = "Cancel",
  danger = false,
  busy = false,
  onConfirm,
  onClose,
}: {
  open: boolean;
  title: string;
  children?: ReactNode;
  confirm: string;
  dismiss?: string;
  danger?: boolean;
  busy?: boolean;
  onConfirm: () => void;
  onClose: () => void;
}) {
  return (
    <Dialog open={open} onClose={onClose} title={title}>
      {children}
      <div className={`row ${styles.dialogActions}`}>
        <button type="button" onClick={onClose} autoFocus>
          {dismiss}
        </button>
        <button type="button" className={danger ? styles.dangerSolid : "primary"} onClick={onConfirm} disabled={busy}>
          {busy ? "Working…" : confirm}
        </button>
      </div>
    </Dialog>
  );
}

/** The foot of a form in a dialog: Close, and its submit button (`submit`, "Saving…" while `busy`). */
export function DialogFormActions({ submit, busy, onCancel }: { submit: string; busy: boolean; onCancel: () => void }) {
  return (
    <div className={`row ${styles.dialogActions}`}>
      <button type="button" onClick={onCancel}>
        Close
      </button>
      <button type="submit" className="primary" disabled={busy}>
        {busy ? "Saving…" : submit}
      </button>
    </div>
  );
}

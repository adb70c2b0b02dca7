"use client";
import { type ReactNode, useState } from "react";

// Small building blocks shared by the dashboard pages.

interface ErrorLike {
  message: string;
  data?: { code?: string | null; requestId?: string | null } | null;
}

/** An error shown inline, with its code (and request ID for unexpected ones). */
export function ErrorText({ error }: { error: ErrorLike | null | undefined }) {
  if (!error) return null;
  const code = error.data?.code;
  return (
    <p className="error" role="alert">
      {error.message}
      {code ? <span className="small mono"> ({code}{code === "internal_error" && error.data?.requestId ? `, ${error.data.requestId}` : ""})</span> : null}
    </p>
  );
}

export function Loading({ what = "Loading" }: { what?: string }) {
  return (
    <p className="muted" aria-busy="true">
      {what}…
    </p>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <p className="muted">{children}</p>;
}

export function CopyButton({ text, label = "Copy" }: { text: string; label?: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <button
      type="button"
      onClick={async () => {
        await navigator.clipboard?.writeText(text).catch(() => undefined);
        setCopied(true);
        setTimeout(() => setCopied(false), 1500);
      }}
    >
      {copied ? "Copied" : label}
    </button>
  );
}

/** A secret shown exactly once, with a copy button and a dismiss button. */
export function SecretOnce({ title, secret, onDone }: { title: string; secret: string; onDone: () => void }) {
  return (
    <div className="panel stack" role="status">
      <strong>{title}</strong>
      <p className="small muted">Copy it now: it is not shown again.</p>
      <div className="secret mono" data-testid="secret">
        {secret}
      </div>
      <div className="row">
        <CopyButton text={secret} />
        <button type="button" onClick={onDone}>
          Done
        </button>
      </div>
    </div>
  );
}

/** A time in the viewer's zone; `short`: the time of day for today, else the date. */
export function Time({ ms, short = false }: { ms: number | null | undefined; short?: boolean }) {
  if (!ms) return <span className="muted">—</span>;
  const d = new Date(ms);
  const today = new Date().toDateString() === d.toDateString();
  const text = !short ? d.toLocaleString() : today ? d.toLocaleTimeString([], { hour: "numeric", minute: "2-digit" }) : d.toLocaleDateString([], { month: "short", day: "numeric" });
  return (
    <time dateTime={d.toISOString()} title={short ? d.toLocaleString() : undefined}>
      {text}
    </time>
  );
}

const GOOD = new Set(["sent", "succeeded", "active", "delivered"]);
const BAD = new Set(["failed", "revoked", "expired", "disabled", "rejected"]);

export function StatusBadge({ status }: { status: string }) {
  const tone = GOOD.has(status) ? "ok" : BAD.has(status) ? "bad" : "warn";
  return <span className={`badge ${tone}`}>{status}</span>;
}

/** A warning in one short line (its first sentence); the whole text on demand. */
export function ShortWarning({ text }: { text: string }) {
  const first = text.split(/(?<=[.:;])\s/)[0] ?? text;
  if (first.length >= text.length) {
    return (
      <div className="small warning" role="note">
        {text}
      </div>
    );
  }
  return (
    <details className="small warning" role="note">
      <summary>{first}</summary>
      {text.slice(first.length).trim()}
    </details>
  );
}

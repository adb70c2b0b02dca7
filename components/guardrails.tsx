"use client";
import { useId } from "react";
import type { Scope } from "@/server/services/access/scopes";
import styles from "./approvals.module.css";

// The guardrails of an API key handed to an AI agent or script (server/policy/key-guardrails.ts):
// whom it may write to, whether each send waits for approval, and two limits. The same fields
// create a key and change one; a summary shows them in the key list.

export interface Guardrails {
  allow_to: string[] | null;
  require_approval: boolean;
  max_sends_per_chat_without_reply: number | null;
  max_sends_per_day: number | null;
}

/** The fields as typed: the allow list as text, the limits as the number inputs' strings. */
export interface GuardrailsDraft {
  allowTo: string;
  requireApproval: boolean;
  perChat: string;
  perDay: string;
}

/** The scope a key with guardrails may never hold: it could approve its own sends or resume a chat the owner paused. */
export const APPROVE_SCOPE: Scope = "outbox:approve";

export const NO_GUARDRAILS: GuardrailsDraft = { allowTo: "", requireApproval: false, perChat: "", perDay: "" };

const entries = (text: string) => [...new Set(text.split(/[\n,;]+/).map((s) => s.trim()).filter(Boolean))];
const limit = (text: string) => (text.trim() ? Number(text) : null);

export function draftOf(g: Guardrails): GuardrailsDraft {
  return {
    allowTo: (g.allow_to ?? []).join("\n"),
    requireApproval: g.require_approval,
    perChat: g.max_sends_per_chat_without_reply?.toString() ?? "",
    perDay: g.max_sends_per_day?.toString() ?? "",
  };
}

/** Every field, so a change replaces the key's guardrails (null clears one). */
export function guardrailsOf(d: GuardrailsDraft): Guardrails {
  const allow = entries(d.allowTo);
  return { allow_to: allow.length ? allow : null, require_approval: d.requireApproval, max_sends_per_chat_without_reply: limit(d.perChat), max_sends_per_day: limit(d.perDay) };
}

export function isGuarded(g: Guardrails): boolean {
  return g.allow_to !== null || g.require_approval || g.max_sends_per_chat_without_reply !== null || g.max_sends_per_day !== null;
}

/** The allow list, approval and the two limits, each with what it does; controlled. */
export function GuardrailsFields({
  value,
  onChange,
  legend = "Guardrails",
  framed = true,
}: {
  value: GuardrailsDraft;
  onChange: (next: GuardrailsDraft) => void;
  legend?: string;
  /** In a box with its legend (a form of its own); false inside a dialog that names it already. */
  framed?: boolean;
}) {
  const id = useId();
  const set = (patch: Partial<GuardrailsDraft>) => onChange({ ...value, ...patch });
  const count = entries(value.allowTo).length;
  return (
    <fieldset className={framed ? styles.guardrails : `${styles.guardrails} ${styles.unframed}`}>
      <legend className={framed ? undefined : "visually-hidden"}>{legend}</legend>
      <p className="small muted" style={{ margin: 0 }}>
        For a key an AI agent or a script uses. A chat you pause refuses sends by a key with any guardrail; your own sends still go.
      </p>
      <label>
        Only send to
        <textarea
          rows={3}
          value={value.allowTo}
          onChange={(e) => set({ allowTo: e.target.value })}
          placeholder={"+15551234567\nfriend@example.com\ncht_…"}
          aria-describedby={`${id}-allow`}
          spellCheck={false}
        />
        <span id={`${id}-allow`} className={styles.hint}>
          Phone numbers, emails or chat IDs (cht_…), one a line. {count ? `${count} listed.` : "Empty: anyone the line may write to."}
        </span>
      </label>
      <label className="check">
        <input type="checkbox" checked={value.requireApproval} onChange={(e) => set({ requireApproval: e.target.checked })} aria-describedby={`${id}-approval`} />
        Require approval of each send
      </label>
      <span id={`${id}-approval`} className={styles.hint} style={{ marginTop: "-0.5rem" }}>
        Its sends wait in Approvals until you approve or reject them.
      </span>
      <div className={styles.limits}>
        <LimitField label="Sends per chat without a reply" hint="Then it waits until the contact writes back." id={`${id}-chat`} value={value.perChat} onChange={(perChat) => set({ perChat })} />
        <LimitField label="Sends per day" hint="In any 24 hours." id={`${id}-day`} value={value.perDay} onChange={(perDay) => set({ perDay })} />
      </div>
    </fieldset>
  );
}

/** A limit of sends: a whole number, or blank for none. */
function LimitField({ label, hint, id, value, onChange }: { label: string; hint: string; id: string; value: string; onChange: (value: string) => void }) {
  return (
    <label>
      {label}
      <input type="number" inputMode="numeric" min={1} max={1_000_000} step={1} value={value} onChange={(e) => onChange(e.target.value)} placeholder="No limit" aria-describedby={id} />
      <span id={id} className={styles.hint}>
        {hint}
      </span>
    </label>
  );
}

/** A key's guardrails in a few words, or "None". */
export function GuardrailsSummary({ g }: { g: Guardrails }) {
  if (!isGuarded(g)) return <span className="muted">None</span>;
  const parts: string[] = [];
  if (g.require_approval) parts.push("Approval required");
  if (g.allow_to) parts.push(g.allow_to.length === 1 ? `Only ${g.allow_to[0]}` : `Only ${g.allow_to.length} recipients`);
  if (g.max_sends_per_chat_without_reply !== null) parts.push(`${g.max_sends_per_chat_without_reply} per chat without a reply`);
  if (g.max_sends_per_day !== null) parts.push(`${g.max_sends_per_day} a day`);
  return (
    <ul className={styles.summary} aria-label="Guardrails" data-testid="guardrails-summary">
      {parts.map((p) => (
        <li key={p} title={p.startsWith("Only") && g.allow_to ? g.allow_to.join(", ") : undefined}>
          {p}
        </li>
      ))}
    </ul>
  );
}

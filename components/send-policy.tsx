"use client";
import { useMutation } from "@tanstack/react-query";
import { type FormEvent, type ReactNode, useId, useMemo, useState } from "react";
import { ErrorText } from "./widgets";
import { browserTimeZone } from "./when";
import type { inferRouterOutputs } from "@trpc/server";
import { useTRPC } from "@/lib/trpc";
import type { AppRouter } from "@/server/transports/trpc/router";
import styles from "./sending.module.css";

// A line's send policy (server/policy/line-send-policy.ts): contact-first, the new-contact budgets
// per sliding hour and day (blank: no limit), quiet hours in an IANA zone, and the pace. The
// server validates; a refusal is shown next to the field it names (error.data.param).

interface SendPolicy {
  contact_first: boolean;
  new_contacts_per_hour: number | null;
  new_contacts_per_day: number | null;
  quiet_hours: { start: string; end: string; timezone: string } | null;
  rate_per_second: number;
}

export type SavedPolicy = inferRouterOutputs<AppRouter>["lines"]["setPolicy"];

/** The policy in one sentence: "Contact first · 10 new contacts an hour, 50 a day · quiet 21:00–08:00 (Europe/Berlin) · 1 send/s". */
export function policySummary(p: SendPolicy): string {
  const budgets =
    p.new_contacts_per_hour === null && p.new_contacts_per_day === null
      ? "no new-contact limit"
      : [p.new_contacts_per_hour === null ? null : `${p.new_contacts_per_hour} new contacts an hour`, p.new_contacts_per_day === null ? null : `${p.new_contacts_per_day} a day`]
          .filter(Boolean)
          .join(", ");
  return [
    p.contact_first ? "Contact first" : "May message first",
    p.contact_first ? null : budgets,
    p.quiet_hours ? `quiet ${p.quiet_hours.start}–${p.quiet_hours.end} (${p.quiet_hours.timezone})` : "no quiet hours",
    `${p.rate_per_second} send${p.rate_per_second === 1 ? "" : "s"}/s`,
  ]
    .filter(Boolean)
    .join(" · ");
}

/** Every IANA zone the browser knows (with the current one, should it be missing). */
function timeZones(current: string): string[] {
  const known = typeof Intl.supportedValuesOf === "function" ? Intl.supportedValuesOf("timeZone") : [];
  return [...new Set([current, "UTC", ...known])].sort();
}

type FieldName = "contact_first" | "new_contacts_per_hour" | "new_contacts_per_day" | "quiet_hours" | "quiet_hours.start" | "quiet_hours.end" | "quiet_hours.timezone" | "rate_per_second";

/** The fields a refusal is shown next to. */
const PLACED: readonly FieldName[] = ["new_contacts_per_hour", "new_contacts_per_day", "quiet_hours", "quiet_hours.start", "quiet_hours.end", "quiet_hours.timezone", "rate_per_second"];

/** The server's sentence without its "Invalid value for 'x': " prefix, capitalised. */
function sentence(message: string): string {
  const m = message.replace(/^Invalid value for '[^']*':\s*/, "");
  return m.charAt(0).toUpperCase() + m.slice(1);
}

const blank = (v: string) => v.trim() === "";

function Field({ id, label, hint, error, children }: { id: string; label: string; hint?: ReactNode; error?: string | null; children: ReactNode }) {
  return (
    <div className={styles.field}>
      <label htmlFor={id}>{label}</label>
      {children}
      {error ? (
        <div id={`${id}-error`} className={`small error ${styles.fieldError}`} role="alert">
          {error}
        </div>
      ) : hint ? (
        <div id={`${id}-hint`} className="small muted">
          {hint}
        </div>
      ) : null}
    </div>
  );
}

function CheckField({ id, label, checked, onChange, hint, children }: { id: string; label: string; checked: boolean; onChange: (checked: boolean) => void; hint: string; children?: ReactNode }) {
  return (
    <div className={styles.field}>
      <label className="check">
        <input type="checkbox" checked={checked} onChange={(e) => onChange(e.target.checked)} aria-describedby={`${id}-hint`} />
        {label}
      </label>
      <div id={`${id}-hint`} className="small muted">
        {hint}
      </div>
      {children}
    </div>
  );
}

export function SendPolicyForm({
  lineId,
  policy,
  editable,
  onSaved,
  status,
}: {
  lineId: string;
  policy: SendPolicy;
  editable: boolean;
  /** What the server kept (the page shows it; this form is then made anew from it). */
  onSaved: (result: SavedPolicy) => void;
  /** A note beside the button ("Saved"), kept by the page across that remount. */
  status?: string;
}) {
  const trpc = useTRPC();
  const uid = useId();
  const id = (name: string) => `${uid}-${name}`;
  const [contactFirst, setContactFirst] = useState(policy.contact_first);
  const [perHour, setPerHour] = useState(policy.new_contacts_per_hour?.toString() ?? "");
  const [perDay, setPerDay] = useState(policy.new_contacts_per_day?.toString() ?? "");
  const [quiet, setQuiet] = useState(policy.quiet_hours !== null);
  const [start, setStart] = useState(policy.quiet_hours?.start ?? "21:00");
  const [end, setEnd] = useState(policy.quiet_hours?.end ?? "08:00");
  const [zone, setZone] = useState(() => policy.quiet_hours?.timezone ?? browserTimeZone());
  const [rate, setRate] = useState(String(policy.rate_per_second));
  const [local, setLocal] = useState<Partial<Record<FieldName, string>>>({});
  const zones = useMemo(() => timeZones(zone), [zone]);
  const save = useMutation(
    trpc.lines.setPolicy.mutationOptions({
      onSuccess: (r) => onSaved(r),
    }),
  );

  const serverParam = save.error?.data?.param ?? null;
  const errorOf = (name: FieldName): string | null => local[name] ?? (serverParam === name && save.error ? sentence(save.error.message) : null);
  // A refusal about no field of this form (or the whole quiet-hours object) shows above the button.
  const unplaced = save.error && !(PLACED as readonly (string | null)[]).includes(serverParam) ? save.error : null;
  const field = (name: FieldName) => ({ id: id(name), error: errorOf(name) });
  const wired = (name: FieldName, hasHint = true) => ({
    id: id(name),
    "aria-invalid": errorOf(name) ? true : undefined,
    "aria-describedby": errorOf(name) ? `${id(name)}-error` : hasHint ? `${id(name)}-hint` : undefined,
  });
  const budgets = [
    ["new_contacts_per_hour", "New contacts per hour", perHour, setPerHour],
    ["new_contacts_per_day", "New contacts per day", perDay, setPerDay],
  ] as const;

  function number(value: string, name: FieldName, problems: Partial<Record<FieldName, string>>): number | null | undefined {
    if (blank(value)) return null;
    const n = Number(value.trim());
    if (!Number.isFinite(n)) {
      problems[name] = name === "rate_per_second" ? "Enter a number of sends per second, such as 1 or 0.5." : "Enter a whole number, or leave it blank for no limit.";
      return undefined;
    }
    return n;
  }

  function submit(e: FormEvent) {
    e.preventDefault();
    const problems: Partial<Record<FieldName, string>> = {};
    const hour = number(perHour, "new_contacts_per_hour", problems);
    const day = number(perDay, "new_contacts_per_day", problems);
    const pace = blank(rate) ? undefined : number(rate, "rate_per_second", problems);
    setLocal(problems);
    if (Object.keys(problems).length) return;
    save.mutate({
      line_id: lineId,
      policy: {
        contact_first: contactFirst,
        new_contacts_per_hour: hour,
        new_contacts_per_day: day,
        quiet_hours: quiet ? { start, end, timezone: zone.trim() } : null,
        ...(pace === undefined || pace === null ? {} : { rate_per_second: pace }),
      },
    });
  }

  return (
    <form className="stack" onSubmit={submit} noValidate aria-label="Send policy">
      <fieldset className={styles.plain} disabled={!editable}>
        <legend className="visually-hidden">Send policy</legend>
        <div className="stack">
          <CheckField
            id={id("contact_first")}
            label="Contact first"
            checked={contactFirst}
            onChange={setContactFirst}
            hint={contactFirst ? "Sends only to people who texted this line first." : "The line may start conversations, within the new-contact budgets below."}
          />

          <div className={styles.fieldGrid}>
            {budgets.map(([name, label, value, set]) => (
              <Field key={name} {...field(name)} label={label} hint="Blank: no limit.">
                <input {...wired(name)} inputMode="numeric" value={value} onChange={(e) => set(e.target.value)} placeholder="No limit" />
              </Field>
            ))}
          </div>
          <p className="small muted" style={{ margin: 0 }}>
            Budgets count the conversations the line opens with people it never messaged, over a sliding hour and 24 hours;
            {contactFirst ? " they apply once contact-first is off." : " a send over budget waits for the next free slot."}
          </p>

          <CheckField
            id={id("quiet")}
            label="Quiet hours"
            checked={quiet}
            onChange={setQuiet}
            hint="New messages wait until the window ends; a reply to someone who wrote in the last 30 minutes still goes."
          >
            {errorOf("quiet_hours") ? (
              <div className="small error" role="alert">
                {errorOf("quiet_hours")}
              </div>
            ) : null}
          </CheckField>
          {quiet ? (
            <div className={styles.quietFields}>
              <Field {...field("quiet_hours.start")} label="Start">
                <input {...wired("quiet_hours.start", false)} type="time" value={start} onChange={(e) => setStart(e.target.value)} />
              </Field>
              <Field {...field("quiet_hours.end")} label="End" hint={start > end ? "Next day" : undefined}>
                <input {...wired("quiet_hours.end", start > end)} type="time" value={end} onChange={(e) => setEnd(e.target.value)} />
              </Field>
              <Field {...field("quiet_hours.timezone")} label="Time zone" hint="Type to search, e.g. America/New_York.">
                <input {...wired("quiet_hours.timezone")} list={id("zones")} value={zone} onChange={(e) => setZone(e.target.value)} autoComplete="off" spellCheck={false} />
                <datalist id={id("zones")}>
                  {zones.map((z) => (
                    <option key={z} value={z} />
                  ))}
                </datalist>
              </Field>
            </div>
          ) : null}

          <div className={styles.fieldGrid}>
            <Field {...field("rate_per_second")} label="Sends per second" hint="The most this line starts each second (above 0, at most 100).">
              <input {...wired("rate_per_second")} inputMode="decimal" value={rate} onChange={(e) => setRate(e.target.value)} />
            </Field>
          </div>
        </div>
      </fieldset>
      <ErrorText error={unplaced} />
      {editable ? (
        <div className="row">
          <button type="submit" className="primary" disabled={save.isPending}>
            {save.isPending ? "Saving…" : "Save policy"}
          </button>
          <span role="status" className="small ok">
            {save.isPending || save.error ? "" : (status ?? "")}
          </span>
        </div>
      ) : (
        <p className="small muted">The shared sandbox line&rsquo;s policy is the operator&rsquo;s: it can be read here, not changed.</p>
      )}
    </form>
  );
}

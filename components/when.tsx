"use client";
import { type ReactNode, useEffect, useId, useState } from "react";

// Times as people read them: "in 2 hours", the moment in the browser's zone, its zone named.

/** Now, ticking every `everyMs` while the component is shown (relative times stay true). */
export function useNow(everyMs = 30_000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(t);
  }, [everyMs]);
  return now;
}

const UNITS: [Intl.RelativeTimeFormatUnit, number][] = [
  ["day", 86_400_000],
  ["hour", 3_600_000],
  ["minute", 60_000],
];

/** "in 2 hours", "in 5 minutes", "in a few seconds", "3 minutes ago" (the locale's words). */
function relativeTime(ms: number, now = Date.now()): string {
  const diff = ms - now;
  const abs = Math.abs(diff);
  const format = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
  if (abs < 45_000) return diff >= 0 ? "in a few seconds" : "just now";
  for (const [unit, size] of UNITS) {
    // Up to 36 hours in hours, 90 minutes in minutes: "in 30 hours" reads better than "tomorrow" for a send.
    const threshold = unit === "day" ? 36 * 3_600_000 : unit === "hour" ? 90 * 60_000 : 0;
    if (abs >= threshold) return format.format(Math.round(diff / size), unit);
  }
  return format.format(Math.round(diff / 60_000), "minute");
}

/** The moment in the browser's zone, with the zone's short name: "Tue, Dec 3, 2:30 PM CET". */
function absoluteTime(ms: number, now = Date.now()): string {
  const d = new Date(ms);
  const sameYear = d.getFullYear() === new Date(now).getFullYear();
  return d.toLocaleString(undefined, {
    weekday: "short",
    month: "short",
    day: "numeric",
    year: sameYear ? undefined : "numeric",
    hour: "numeric",
    minute: "2-digit",
    timeZoneName: "short",
  });
}

/** "in 2 hours · Tue, Dec 3, 2:30 PM CET" (or only one of the two), as a <time>. */
export function When({ ms, show = "both" }: { ms: number; show?: "both" | "relative" | "absolute" }) {
  const now = useNow();
  const rel = relativeTime(ms, now);
  const abs = absoluteTime(ms, now);
  const text = show === "relative" ? rel : show === "absolute" ? abs : `${rel} · ${abs}`;
  return (
    <time dateTime={new Date(ms).toISOString()} title={abs}>
      {text}
    </time>
  );
}

export function browserTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
}

/** A `datetime-local` value ("2026-12-03T14:30") for a moment, in the browser's zone. */
export function toLocalInput(ms: number): string {
  const d = new Date(ms);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** The server's limit on scheduling ahead. */
const MAX_AHEAD_MS = 365 * 86_400_000;

/** A `datetime-local` value read in the browser's zone and checked as the server will, or why not. */
export function parseLocalInput(value: string, now = Date.now()): { ms: number } | { error: string } {
  if (!value) return { error: "Choose a date and time." };
  const ms = new Date(value).getTime();
  if (Number.isNaN(ms)) return { error: "That is not a date and time." };
  if (ms <= now + 30_000) return { error: "Choose a time in the future." };
  if (ms > now + MAX_AHEAD_MS) return { error: "Choose a time at most 365 days ahead." };
  return { ms };
}

/** A "Send at" field in the browser's zone, with its hint, or in its place why the time was refused. */
export function SendAtField({ value, onChange, problem, hint, required }: { value: string; onChange: (value: string) => void; problem: string | null; hint: ReactNode; required?: boolean }) {
  const id = useId();
  return (
    <>
      <label htmlFor={id}>Send at</label>
      <input
        id={id}
        type="datetime-local"
        value={value}
        min={toLocalInput(Date.now())}
        onChange={(e) => onChange(e.target.value)}
        aria-invalid={problem ? true : undefined}
        aria-describedby={`${id}-note`}
        required={required}
      />
      <div id={`${id}-note`} className="small">
        {problem ? (
          <span className="error" role="alert">
            {problem}
          </span>
        ) : (
          <span className="muted">{hint}</span>
        )}
      </div>
    </>
  );
}

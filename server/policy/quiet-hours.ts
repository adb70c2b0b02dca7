import { z } from "zod";

export interface QuietHours {
  start: string;
  end: string;
  timezone: string;
}

export interface QuietState {
  active: boolean;
  /** When active: when the current window ends (Unix ms). */
  until: number | null;
  /** When the next window starts: when active, the one after the current. */
  nextStart: number;
}

const HH_MM = /^(?:[01]\d|2[0-3]):[0-5]\d$/;
const TIME_MESSAGE = 'must be a 24-hour time "HH:MM"';
const ZONE_MESSAGE = 'must be an IANA time zone such as "America/New_York"';

function isTimeZone(timeZone: string): boolean {
  if (timeZone === "") return false; // refused here, not left to the engine
  try {
    new Intl.DateTimeFormat("en-US", { timeZone });
    return true;
  } catch {
    return false;
  }
}

const time = z.string({ error: TIME_MESSAGE }).regex(HH_MM, TIME_MESSAGE);

/** { start: "21:00", end: "08:00", timezone: "America/New_York" }; start > end crosses midnight. */
export const QuietHoursSchema: z.ZodType<QuietHours> = z
  .object({
    start: time,
    end: time,
    timezone: z.string({ error: ZONE_MESSAGE }).refine(isTimeZone, ZONE_MESSAGE),
  })
  .strict()
  .superRefine((q, ctx) => {
    // Equal ends could mean "never" or "all day"; make the user say which by refusing it.
    if (q.start === q.end) ctx.addIssue({ code: "custom", path: ["end"], message: "must differ from start" });
  });

const SECOND = 1_000;
const MINUTE = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;

interface Span {
  format: Intl.DateTimeFormat;
  from: number;
  to: number;
  starts: number[];
  offsets: number[];
}

// formatToParts is too slow to call per send: each zone keeps its offsets (offsets[i] from starts[i])
// over 8 days around `now`, probed daily, at most one change a day (docs/architecture.md).
const REACH = 3 * DAY;
const WIDTH = 8 * DAY;
const MAX_ZONES = 1_000;
const spans = new Map<string, Span>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  // h23: "hour12: false" can print midnight as "24".
  return new Intl.DateTimeFormat("en-US", {
    timeZone,
    hourCycle: "h23",
    year: "numeric",
    month: "numeric",
    day: "numeric",
    hour: "numeric",
    minute: "numeric",
    second: "numeric",
  });
}

function offsetAt(format: Intl.DateTimeFormat, t: number): number {
  const f = { year: 0, month: 1, day: 1, hour: 0, minute: 0, second: 0 };
  for (const part of format.formatToParts(t)) {
    if (part.type in f) f[part.type as keyof typeof f] = Number(part.value);
  }
  const wall = Date.UTC(f.year, f.month - 1, f.day, f.hour, f.minute, f.second);
  return wall - (t - (((t % SECOND) + SECOND) % SECOND));
}

function changeBetween(format: Intl.DateTimeFormat, lo: number, hi: number, before: number): number {
  while (hi - lo > SECOND) {
    const mid = lo + Math.floor((hi - lo) / (2 * SECOND)) * SECOND;
    if (offsetAt(format, mid) === before) lo = mid;
    else hi = mid;
  }
  return hi;
}

function probe(format: Intl.DateTimeFormat, from: number): Span {
  const span: Span = { format, from, to: from + WIDTH, starts: [-Infinity], offsets: [offsetAt(format, from)] };
  for (let t = from + DAY; t <= span.to; t += DAY) {
    const before = span.offsets[span.offsets.length - 1]!;
    const offset = offsetAt(format, t);
    if (offset === before) continue;
    span.starts.push(changeBetween(format, t - DAY, t, before));
    span.offsets.push(offset);
  }
  return span;
}

function spanAround(timeZone: string, now: number): Span {
  const cached = spans.get(timeZone);
  if (cached && cached.from <= now - REACH && now + REACH <= cached.to) return cached;
  const span = probe(cached?.format ?? formatter(timeZone), Math.floor(now / HOUR) * HOUR - REACH);
  if (!cached && spans.size >= MAX_ZONES) spans.clear();
  spans.set(timeZone, span);
  return span;
}

function wallAt(span: Span, t: number): number {
  let i = span.starts.length - 1;
  while (t < span.starts[i]!) i--;
  return t + span.offsets[i]!;
}

/** The first instant the clock reads `wall` or later: a time skipped by spring-forward is the jump, a time read twice its first occurrence. */
function instantOf(span: Span, wall: number): number {
  const { starts, offsets } = span;
  for (let i = 0; i < starts.length - 1; i++) {
    const t = Math.max(starts[i]!, wall - offsets[i]!);
    if (t < starts[i + 1]!) return t;
  }
  return Math.max(starts[starts.length - 1]!, wall - offsets[offsets.length - 1]!);
}

function minutesOf(hhmm: string): number {
  if (!HH_MM.test(hhmm)) throw new RangeError(`quiet hours: ${JSON.stringify(hhmm)} ${TIME_MESSAGE}`);
  return Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3));
}

export function quietState(q: QuietHours, now: number): QuietState {
  if (!Number.isFinite(now)) throw new RangeError("quiet hours: now must be a finite time");
  const start = minutesOf(q.start) * MINUTE;
  const overnight = q.start > q.end;
  const end = minutesOf(q.end) * MINUTE + (overnight ? DAY : 0);
  const span = spanAround(q.timezone, now);
  const at = (day: number, time: number) => instantOf(span, day * DAY + time);
  const today = Math.floor(wallAt(span, now) / DAY);
  // The window holding `now` started today or yesterday; two more days guard clocks that fall back across midnight.
  for (let day = today - (overnight ? 1 : 0); day <= today + 2; day++) {
    const from = at(day, start);
    if (now < from) return { active: false, until: null, nextStart: from };
    const until = at(day, end);
    if (now < until) return { active: true, until, nextStart: at(day + 1, start) };
  }
  throw new Error(`quiet hours: no window found after ${new Date(now).toISOString()} in ${q.timezone}`);
}

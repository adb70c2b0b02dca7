import { describe, expect, it } from "vitest";
import { type QuietHours, QuietHoursSchema, quietState } from "./quiet-hours";

// Quiet hours as instants: `now` is written as local time with its offset, the expected instants in UTC.

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const iso = (ms: number) => new Date(ms).toISOString();

function state(q: QuietHours, now: string) {
  const s = quietState(q, Date.parse(now));
  return { active: s.active, until: s.until === null ? null : iso(s.until), nextStart: iso(s.nextStart) };
}

const quiet = (until: string, nextStart: string) => ({ active: true, until, nextStart });
const open = (nextStart: string) => ({ active: false, until: null, nextStart });

/** An independent reading of a zone's clock, for the sweep below. */
function wallClock(timeZone: string) {
  const format = new Intl.DateTimeFormat("en-US", { timeZone, hourCycle: "h23", year: "numeric", month: "numeric", day: "numeric", hour: "numeric", minute: "numeric" });
  const wall = (t: number) => {
    const p = Object.fromEntries(format.formatToParts(t).map(({ type, value }) => [type, Number(value)]));
    return Date.UTC(p.year!, p.month! - 1, p.day!, p.hour!, p.minute!);
  };
  return {
    hhmm: (t: number) => iso(wall(t)).slice(11, 16),
    /** No clock change within 3 hours either way. */
    steady: (t: number) => wall(t + 3 * HOUR) - wall(t - 3 * HOUR) === 6 * HOUR,
  };
}

const ny = (start: string, end: string): QuietHours => ({ start, end, timezone: "America/New_York" });

describe("quietState", () => {
  it("holds overnight from 21:00 until 08:00 the next morning", () => {
    const q = ny("21:00", "08:00");
    expect(state(q, "2026-06-15T20:59:00-04:00")).toEqual(open("2026-06-16T01:00:00.000Z"));
    expect(state(q, "2026-06-15T21:00:00-04:00")).toEqual(quiet("2026-06-16T12:00:00.000Z", "2026-06-17T01:00:00.000Z"));
    expect(state(q, "2026-06-16T03:00:00-04:00")).toEqual(quiet("2026-06-16T12:00:00.000Z", "2026-06-17T01:00:00.000Z"));
    expect(state(q, "2026-06-16T07:59:59.999-04:00")).toEqual(quiet("2026-06-16T12:00:00.000Z", "2026-06-17T01:00:00.000Z"));
    expect(state(q, "2026-06-16T08:00:00-04:00")).toEqual(open("2026-06-17T01:00:00.000Z"));
  });

  it("holds a window within one day, in summer and winter time", () => {
    const q = { start: "12:00", end: "14:00", timezone: "Europe/London" };
    expect(state(q, "2026-07-01T11:59:00+01:00")).toEqual(open("2026-07-01T11:00:00.000Z"));
    expect(state(q, "2026-07-01T12:00:00+01:00")).toEqual(quiet("2026-07-01T13:00:00.000Z", "2026-07-02T11:00:00.000Z"));
    expect(state(q, "2026-07-01T14:00:00+01:00")).toEqual(open("2026-07-02T11:00:00.000Z"));
    expect(state(q, "2026-01-15T13:30:00Z")).toEqual(quiet("2026-01-15T14:00:00.000Z", "2026-01-16T12:00:00.000Z"));
  });

  it("ends a window that runs to midnight at midnight", () => {
    const q = ny("21:00", "00:00");
    expect(state(q, "2026-06-15T23:59:00-04:00")).toEqual(quiet("2026-06-16T04:00:00.000Z", "2026-06-17T01:00:00.000Z"));
    expect(state(q, "2026-06-16T00:00:00-04:00")).toEqual(open("2026-06-17T01:00:00.000Z"));
  });

  describe("New York's spring forward (2026-03-08, 02:00 EST becomes 03:00 EDT at 07:00Z)", () => {
    it("a window over the gap is an hour shorter", () => {
      const q = ny("01:00", "03:30");
      expect(state(q, "2026-03-08T00:59:00-05:00")).toEqual(open("2026-03-08T06:00:00.000Z"));
      expect(state(q, "2026-03-08T01:30:00-05:00")).toEqual(quiet("2026-03-08T07:30:00.000Z", "2026-03-09T05:00:00.000Z"));
      expect(state(q, "2026-03-08T03:30:00-04:00")).toEqual(open("2026-03-09T05:00:00.000Z"));
    });

    it("a start inside the gap starts when the clock jumps, at 03:00 EDT", () => {
      const q = ny("02:30", "04:00");
      expect(state(q, "2026-03-07T07:00:00-05:00")).toEqual(open("2026-03-08T07:00:00.000Z"));
      expect(state(q, "2026-03-08T01:59:59-05:00")).toEqual(open("2026-03-08T07:00:00.000Z"));
      expect(state(q, "2026-03-08T03:00:00-04:00")).toEqual(quiet("2026-03-08T08:00:00.000Z", "2026-03-09T06:30:00.000Z"));
    });

    it("an overnight window from 21:00 EST ends at 08:00 EDT", () => {
      const q = ny("21:00", "08:00");
      expect(state(q, "2026-03-07T20:59:00-05:00")).toEqual(open("2026-03-08T02:00:00.000Z"));
      expect(state(q, "2026-03-07T22:00:00-05:00")).toEqual(quiet("2026-03-08T12:00:00.000Z", "2026-03-09T01:00:00.000Z"));
      expect(state(q, "2026-03-08T07:59:00-04:00")).toEqual(quiet("2026-03-08T12:00:00.000Z", "2026-03-09T01:00:00.000Z"));
      expect(state(q, "2026-03-08T08:00:00-04:00")).toEqual(open("2026-03-09T01:00:00.000Z"));
    });
  });

  describe("New York's fall back (2026-11-01, 02:00 EDT becomes 01:00 EST at 06:00Z)", () => {
    it("a start in the repeated hour is its first occurrence, and the window spans both", () => {
      const q = ny("01:30", "02:00");
      expect(state(q, "2026-11-01T01:29:00-04:00")).toEqual(open("2026-11-01T05:30:00.000Z"));
      expect(state(q, "2026-11-01T01:30:00-04:00")).toEqual(quiet("2026-11-01T07:00:00.000Z", "2026-11-02T06:30:00.000Z"));
      // The clock reads 01:15 again, but the window that began at the first 01:30 runs until 02:00 EST.
      expect(state(q, "2026-11-01T01:15:00-05:00")).toEqual(quiet("2026-11-01T07:00:00.000Z", "2026-11-02T06:30:00.000Z"));
      expect(state(q, "2026-11-01T02:00:00-05:00")).toEqual(open("2026-11-02T06:30:00.000Z"));
    });

    it("an end in the repeated hour is its first occurrence", () => {
      const q = ny("23:00", "01:30");
      expect(state(q, "2026-11-01T01:29:00-04:00")).toEqual(quiet("2026-11-01T05:30:00.000Z", "2026-11-02T04:00:00.000Z"));
      expect(state(q, "2026-11-01T01:29:00-05:00")).toEqual(open("2026-11-02T04:00:00.000Z"));
    });

    it("an overnight window from 21:00 EDT ends at 08:00 EST, an hour longer", () => {
      const q = ny("21:00", "08:00");
      expect(state(q, "2026-10-31T21:00:00-04:00")).toEqual(quiet("2026-11-01T13:00:00.000Z", "2026-11-02T02:00:00.000Z"));
      expect(state(q, "2026-11-01T07:59:00-05:00")).toEqual(quiet("2026-11-01T13:00:00.000Z", "2026-11-02T02:00:00.000Z"));
      expect(state(q, "2026-11-01T08:00:00-05:00")).toEqual(open("2026-11-02T02:00:00.000Z"));
    });
  });

  it("follows Berlin's changes, east of UTC (2026-03-29 and 2026-10-25, both at 01:00Z)", () => {
    const night = { start: "22:00", end: "07:00", timezone: "Europe/Berlin" };
    expect(state(night, "2026-03-28T23:00:00+01:00")).toEqual(quiet("2026-03-29T05:00:00.000Z", "2026-03-29T20:00:00.000Z"));
    expect(state(night, "2026-10-24T23:00:00+02:00")).toEqual(quiet("2026-10-25T06:00:00.000Z", "2026-10-25T21:00:00.000Z"));
    const gap = { start: "02:30", end: "06:00", timezone: "Europe/Berlin" };
    expect(state(gap, "2026-03-29T01:59:00+01:00")).toEqual(open("2026-03-29T01:00:00.000Z"));
    // 02:30 happens at 00:30Z (CEST) and again at 01:30Z (CET): the first is the start.
    const repeated = { start: "02:30", end: "03:00", timezone: "Europe/Berlin" };
    expect(state(repeated, "2026-10-25T02:29:00+02:00")).toEqual(open("2026-10-25T00:30:00.000Z"));
    expect(state(repeated, "2026-10-25T02:30:00+02:00")).toEqual(quiet("2026-10-25T02:00:00.000Z", "2026-10-26T01:30:00.000Z"));
  });

  it("handles a half-hour offset without DST (Asia/Kolkata, +05:30)", () => {
    const q = { start: "22:00", end: "07:00", timezone: "Asia/Kolkata" };
    expect(state(q, "2026-01-15T21:59:00+05:30")).toEqual(open("2026-01-15T16:30:00.000Z"));
    expect(state(q, "2026-01-15T22:00:00+05:30")).toEqual(quiet("2026-01-16T01:30:00.000Z", "2026-01-16T16:30:00.000Z"));
  });

  it("handles a 30-minute DST shift (Australia/Lord_Howe, 02:00 +10:30 becomes 02:30 +11:00 on 2026-10-04)", () => {
    const night = { start: "21:00", end: "08:00", timezone: "Australia/Lord_Howe" };
    expect(state(night, "2026-10-03T23:00:00+10:30")).toEqual(quiet("2026-10-03T21:00:00.000Z", "2026-10-04T10:00:00.000Z"));
    const gap = { start: "02:15", end: "06:00", timezone: "Australia/Lord_Howe" };
    expect(state(gap, "2026-10-04T01:59:00+10:30")).toEqual(open("2026-10-03T15:30:00.000Z"));
  });

  it("handles UTC", () => {
    const q = { start: "22:00", end: "06:00", timezone: "UTC" };
    expect(state(q, "2026-05-01T23:00:00Z")).toEqual(quiet("2026-05-02T06:00:00.000Z", "2026-05-02T22:00:00.000Z"));
    expect(state(q, "2026-05-02T06:00:00Z")).toEqual(open("2026-05-02T22:00:00.000Z"));
  });

  it("follows two changes a week apart, both at midnight (America/Recife, October 2000)", () => {
    // -03:00, then -02:00 from 2000-10-08 00:00 (03:00Z) until 2000-10-15 00:00, which became 10-14 23:00 again (02:00Z).
    const night = { start: "21:00", end: "08:00", timezone: "America/Recife" };
    expect(state(night, "2000-10-10T09:00:00-02:00")).toEqual(open("2000-10-10T23:00:00.000Z"));
    expect(state(night, "2000-10-14T22:00:00-02:00")).toEqual(quiet("2000-10-15T11:00:00.000Z", "2000-10-16T00:00:00.000Z"));
    expect(state(night, "2000-10-14T23:30:00-03:00")).toEqual(quiet("2000-10-15T11:00:00.000Z", "2000-10-16T00:00:00.000Z"));
    const morning = { start: "00:00", end: "06:00", timezone: "America/Recife" };
    expect(state(morning, "2000-10-07T23:59:00-03:00")).toEqual(open("2000-10-08T03:00:00.000Z"));
  });

  it("agrees with the wall clock, and with itself, every 20 minutes across DST weeks", () => {
    // Each zone's two changes in 2026, and the weeks around them.
    const zones = {
      "America/New_York": ["2026-03-05", "2026-10-29"],
      "Europe/Berlin": ["2026-03-26", "2026-10-22"],
      "Australia/Lord_Howe": ["2026-04-02", "2026-09-30"],
      "America/Santiago": ["2026-04-02", "2026-09-03"],
    };
    const windows = [
      ["21:00", "08:00"],
      ["01:30", "02:00"],
      ["02:15", "03:45"],
      ["00:00", "23:59"],
    ] as const;
    for (const [timezone, weeks] of Object.entries(zones)) {
      const clock = wallClock(timezone);
      for (const [start, end] of windows) {
        const q = { start, end, timezone };
        for (const week of weeks) {
          for (let now = Date.parse(`${week}T00:00:00Z`), stop = now + 7 * DAY; now < stop; now += 20 * 60_000) {
            const s = quietState(q, now);
            // Away from a clock change, quiet means the clock reads a time inside the window.
            if (clock.steady(now)) {
              const hhmm = clock.hhmm(now);
              expect(s.active).toBe(start < end ? start <= hhmm && hhmm < end : start <= hhmm || hhmm < end);
            }
            expect(s.nextStart).toBeGreaterThan(now);
            if (s.active) {
              expect(s.until).toBeGreaterThan(now);
              expect(s.nextStart).toBeGreaterThan(s.until!);
              expect(quietState(q, s.until! - 1)).toEqual(s);
              expect(quietState(q, s.until!).active).toBe(false);
            } else {
              expect(s.until).toBeNull();
              expect(quietState(q, s.nextStart - 1)).toEqual(s);
              expect(quietState(q, s.nextStart).active).toBe(true);
            }
          }
        }
      }
    }
  });

  it("refuses times and zones it cannot read, rather than guessing", () => {
    const q = ny("21:00", "08:00");
    expect(() => quietState({ ...q, start: "9pm" }, Date.now())).toThrow(RangeError);
    expect(() => quietState(q, Number.NaN)).toThrow(RangeError);
    expect(() => quietState({ ...q, timezone: "Mars/Olympus" }, Date.now())).toThrow(RangeError);
  });
});

describe("QuietHoursSchema", () => {
  const valid = { start: "21:00", end: "08:00", timezone: "America/New_York" };

  function issues(input: unknown) {
    const r = QuietHoursSchema.safeParse(input);
    expect(r.success).toBe(false);
    return r.error!.issues.map(({ path, message }) => ({ path, message }));
  }

  it("accepts a window, including one in UTC", () => {
    expect(QuietHoursSchema.parse(valid)).toEqual(valid);
    expect(QuietHoursSchema.parse({ start: "00:00", end: "23:59", timezone: "UTC" })).toEqual({ start: "00:00", end: "23:59", timezone: "UTC" });
  });

  it("names the field of a bad time", () => {
    expect(issues({ ...valid, start: "25:00" })).toEqual([{ path: ["start"], message: 'must be a 24-hour time "HH:MM"' }]);
    expect(issues({ ...valid, end: "8:00" })).toEqual([{ path: ["end"], message: 'must be a 24-hour time "HH:MM"' }]);
    expect(issues({ ...valid, end: "08:60" })).toEqual([{ path: ["end"], message: 'must be a 24-hour time "HH:MM"' }]);
    expect(issues({ ...valid, start: 2100 })).toEqual([{ path: ["start"], message: 'must be a 24-hour time "HH:MM"' }]);
  });

  it("names the field of a bad zone", () => {
    const message = 'must be an IANA time zone such as "America/New_York"';
    expect(issues({ ...valid, timezone: "Mars/Olympus" })).toEqual([{ path: ["timezone"], message }]);
    expect(issues({ ...valid, timezone: "" })).toEqual([{ path: ["timezone"], message }]);
  });

  it("refuses unknown keys", () => {
    const r = QuietHoursSchema.safeParse({ ...valid, days: "weekdays" });
    expect(r.success).toBe(false);
    expect(r.error!.issues).toEqual([expect.objectContaining({ code: "unrecognized_keys", keys: ["days"], path: [] })]);
  });

  it("refuses a window that starts where it ends", () => {
    expect(issues({ ...valid, end: "21:00" })).toEqual([{ path: ["end"], message: "must differ from start" }]);
  });
});

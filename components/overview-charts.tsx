"use client";
import { type ReactNode, useState } from "react";
import { Bar, BarChart, CartesianGrid, Cell, ComposedChart, Line, ResponsiveContainer, Tooltip, XAxis, YAxis } from "recharts";
import styles from "./overview.module.css";

// The overview's charts (recharts). Each is a <figure>: a visible title and a one-sentence
// summary of its numbers, the chart, what the figures mean, and the numbers as a table for
// screen readers. A chart with nothing to show says so in words instead.

const AXIS_TICK = { fill: "var(--muted)", fontSize: 12 };
const GRID = "var(--border)";

const shortDate = new Intl.DateTimeFormat(undefined, { month: "short", day: "numeric", timeZone: "UTC" });
/** "Nov 14" for a local date "2026-11-14" (formatted as a UTC date: it is already local). */
export const dayLabel = (day: string) => shortDate.format(new Date(`${day}T00:00:00Z`));

export const percent = (rate: number | null) => (rate === null ? "no data" : `${Math.round(rate * 1000) / 10}%`);

export interface Series {
  key: string;
  label: string;
  color: string;
}

export function Legend({ items }: { items: { label: string; color: string }[] }) {
  return (
    <ul className={styles.legend} aria-hidden="true">
      {items.map((i) => (
        <li key={i.label}>
          <span className={styles.swatch} style={{ background: i.color }} />
          {i.label}
        </li>
      ))}
    </ul>
  );
}

export function ChartFigure({
  title,
  summary,
  note,
  controls,
  wide,
  testId,
  children,
  table,
}: {
  title: string;
  /** What the numbers say, in a sentence; none when the chart is empty (its placeholder says so). */
  summary?: string;
  note?: ReactNode;
  controls?: ReactNode;
  wide?: boolean;
  testId: string;
  children: ReactNode;
  table?: ReactNode;
}) {
  const id = `chart-${testId}`;
  return (
    <figure className={`${styles.chart} ${wide ? styles.wide : ""}`} aria-labelledby={`${id}-title`} aria-describedby={summary ? `${id}-summary` : undefined} data-testid={testId}>
      <figcaption>
        <div className={styles.chartHead}>
          <h3 className={styles.chartTitle} id={`${id}-title`}>
            {title}
          </h3>
          {controls}
        </div>
        {summary ? (
          <p className={`${styles.summary} small muted`} id={`${id}-summary`}>
            {summary}
          </p>
        ) : null}
      </figcaption>
      {children}
      {note ? <p className={styles.note}>{note}</p> : null}
      {table}
    </figure>
  );
}

export function NoData({ children }: { children: ReactNode }) {
  return (
    <div className={styles.empty} role="note">
      {/* One flex item: text and links inside it keep their spaces. */}
      <span>{children}</span>
    </div>
  );
}

/** The numbers behind a chart, for screen readers: a row per day, a column per series. */
export function DataTable({ caption, columns, rows }: { caption: string; columns: string[]; rows: (string | number)[][] }) {
  // A table does not shrink to 1 px: the hidden box is a div around it.
  return (
    <div className={styles.srOnly}>
      <table>
        <caption>{caption}</caption>
        <thead>
          <tr>
            {columns.map((c) => (
              <th key={c} scope="col">
                {c}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={String(r[0])}>
              {r.map((v, i) => (i === 0 ? <th key={i} scope="row">{v}</th> : <td key={i}>{v}</td>))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

interface TooltipProps {
  active?: boolean;
  label?: string | number;
  payload?: readonly { name?: string | number; value?: unknown; color?: string; dataKey?: unknown; payload?: Record<string, unknown> }[];
}

function DayTooltip({ active, label, payload, rateLabel }: TooltipProps & { rateLabel?: string }) {
  if (!active || !payload?.length) return null;
  return (
    <div className={styles.tooltip}>
      <strong>{dayLabel(String(label))}</strong>
      {payload.map((p) => (
        <div key={String(p.dataKey)}>
          <span className={styles.swatch} style={{ background: p.color, marginRight: 6 }} />
          {p.name}: {p.dataKey === "rate" ? percent((p.value as number | null) ?? null) : String(p.value)}
        </div>
      ))}
      {rateLabel ? <div className="small muted">{rateLabel}</div> : null}
    </div>
  );
}

/** Bars per day (grouped, or stacked when `stacked`). */
export function DayBars({ data, series, stacked, height = 220 }: { data: Record<string, string | number>[]; series: Series[]; stacked?: boolean; height?: number }) {
  return (
    <div className={styles.plot} aria-hidden="true">
      <ResponsiveContainer width="100%" height={height}>
        <BarChart data={data} margin={{ top: 8, right: 8, bottom: 0, left: -16 }} accessibilityLayer={false}>
          <CartesianGrid vertical={false} stroke={GRID} />
          <XAxis dataKey="day" tickFormatter={dayLabel} tick={AXIS_TICK} stroke={GRID} minTickGap={12} />
          <YAxis allowDecimals={false} tick={AXIS_TICK} stroke={GRID} width={44} />
          <Tooltip content={<DayTooltip />} cursor={{ fill: "var(--bg)" }} />
          {series.map((s) => (
            <Bar key={s.key} dataKey={s.key} name={s.label} fill={s.color} stackId={stacked ? "day" : undefined} maxBarSize={stacked ? 28 : 14} isAnimationActive={false} />
          ))}
        </BarChart>
      </ResponsiveContainer>
    </div>
  );
}

/** Outcomes per day as stacked bars (left axis, counts) and the success rate as a line (right axis, %). */
export function RateBars({ data, series, height = 220 }: { data: Record<string, string | number | null>[]; series: Series[]; height?: number }) {
  return (
    <div className={styles.plot} aria-hidden="true">
      <ResponsiveContainer width="100%" height={height}>
        <ComposedChart data={data} margin={{ top: 8, right: 0, bottom: 0, left: -16 }} accessibilityLayer={false}>
          <CartesianGrid vertical={false} stroke={GRID} />
          <XAxis dataKey="day" tickFormatter={dayLabel} tick={AXIS_TICK} stroke={GRID} minTickGap={12} />
          <YAxis yAxisId="n" allowDecimals={false} tick={AXIS_TICK} stroke={GRID} width={44} />
          <YAxis yAxisId="rate" orientation="right" domain={[0, 1]} ticks={[0, 0.5, 1]} tickFormatter={(v: number) => `${v * 100}%`} tick={AXIS_TICK} stroke={GRID} width={44} />
          <Tooltip content={<DayTooltip />} cursor={{ fill: "var(--bg)" }} />
          {series.map((s) => (
            <Bar key={s.key} yAxisId="n" dataKey={s.key} name={s.label} fill={s.color} stackId="day" maxBarSize={28} isAnimationActive={false} />
          ))}
          <Line
            yAxisId="rate"
            dataKey="rate"
            name="Success rate"
            stroke="var(--chart-rate)"
            strokeWidth={2}
            dot={{ r: 3, fill: "var(--chart-rate)" }}
            connectNulls={false}
            isAnimationActive={false}
          />
        </ComposedChart>
      </ResponsiveContainer>
    </div>
  );
}

type Health = "connected" | "degraded" | "disconnected" | null;

export const HEALTH_COLORS: Record<string, string> = {
  connected: "var(--chart-ok)",
  degraded: "var(--chart-warn)",
  disconnected: "var(--chart-bad)",
  none: "var(--chart-none)",
};

const HEALTH_WORDS: Record<string, string> = { connected: "connected", degraded: "degraded", disconnected: "disconnected", none: "no line yet" };

export const healthWord = (s: Health) => HEALTH_WORDS[s ?? "none"]!;

interface HealthRow {
  name: string;
  /** On the axis: the label, or the handle. */
  short: string;
  statuses: Health[];
}

function HealthTooltip({ active, payload, days }: TooltipProps & { days: string[] }) {
  const p = payload?.[0];
  if (!active || !p?.payload) return null;
  const i = Number(String(p.dataKey).slice(1));
  const row = p.payload as unknown as HealthRow & Record<string, unknown>;
  return (
    <div className={styles.tooltip}>
      <strong>{row.name}</strong>
      <div>
        {dayLabel(days[i]!)}: {healthWord(row.statuses[i] ?? null)}
      </div>
    </div>
  );
}

// Line names on the health chart's axis: the axis is as wide as the longest name, up to
// NAME_MAX px and NAME_SHARE of the chart (the days need the rest, a phone's too), and a longer
// name is cut to fit with an ellipsis, its full text in a <title>. Measured in the page's font:
// a count of characters cut "Development line" mid-glyph at the chart's edge, and recharts
// wraps a tick wider than the axis onto two lines.
const NAME_FONT_PX = AXIS_TICK.fontSize;
const NAME_MAX = 140;
const NAME_SHARE = 0.3;
const TICK_SPACE = 10;
let measureContext: CanvasRenderingContext2D | null | undefined;

function textWidth(text: string): number {
  if (measureContext === undefined) measureContext = typeof document === "undefined" ? null : document.createElement("canvas").getContext("2d");
  if (!measureContext) return text.length * NAME_FONT_PX * 0.6;
  measureContext.font = `${NAME_FONT_PX}px ${getComputedStyle(document.body).fontFamily}`;
  return measureContext.measureText(text).width;
}

function fitText(text: string, width: number): string {
  if (textWidth(text) <= width) return text;
  let n = text.length - 1;
  while (n > 1 && textWidth(`${text.slice(0, n)}…`) > width) n--;
  return `${text.slice(0, n).trimEnd()}…`;
}

function NameTick({ x, y, payload, width }: { x?: number; y?: number; payload?: { value?: unknown }; width: number }) {
  const name = String(payload?.value ?? "");
  return (
    <text x={x} y={y} dy="0.35em" textAnchor="end" fill={AXIS_TICK.fill} fontSize={NAME_FONT_PX}>
      <title>{name}</title>
      {fitText(name, width)}
    </text>
  );
}

/** Each line as a row of days, each day in the colour of the line's worst status that day. */
export function HealthTimeline({ rows, days }: { rows: HealthRow[]; days: string[] }) {
  const data = rows.map((r) => ({ ...r, ...Object.fromEntries(days.map((_, i) => [`d${i}`, 1])) }));
  const ticks = days.map((_, i) => i + 0.5).filter((_, i) => i % 3 === 1 || i === days.length - 1);
  const [chartWidth, setChartWidth] = useState(0);
  const longest = Math.ceil(Math.max(0, ...rows.map((r) => textWidth(r.short)))) + TICK_SPACE;
  const axisWidth = Math.round(Math.min(longest, NAME_MAX, chartWidth ? chartWidth * NAME_SHARE : NAME_MAX));
  return (
    <div className={styles.plot} aria-hidden="true">
      <ResponsiveContainer width="100%" height={44 + rows.length * 34} onResize={(width) => setChartWidth(width)}>
        <BarChart data={data} layout="vertical" margin={{ top: 4, right: 20, bottom: 0, left: 0 }} barCategoryGap={6} accessibilityLayer={false}>
          <XAxis
            type="number"
            domain={[0, days.length]}
            ticks={ticks}
            // A narrow phone drops a date rather than overlap two; the newest day always shows.
            interval="preserveEnd"
            tickFormatter={(v: number) => dayLabel(days[Math.floor(v)]!)}
            tick={AXIS_TICK}
            stroke={GRID}
            minTickGap={4}
          />
          <YAxis type="category" dataKey="short" tick={<NameTick width={axisWidth - TICK_SPACE} />} stroke={GRID} width={axisWidth} />
          <Tooltip content={<HealthTooltip days={days} />} cursor={false} shared={false} />
          {days.map((_, i) => (
            <Bar key={i} dataKey={`d${i}`} stackId="line" isAnimationActive={false} stroke="var(--panel)" strokeWidth={1}>
              {rows.map((r, j) => (
                <Cell key={j} fill={HEALTH_COLORS[r.statuses[i] ?? "none"]} />
              ))}
            </Bar>
          ))}
        </BarChart>
      </ResponsiveContainer>
    </div>
  );
}

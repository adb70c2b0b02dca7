"use client";
import { useQuery } from "@tanstack/react-query";
import type { inferRouterOutputs } from "@trpc/server";
import Link from "next/link";
import { useMemo, useState } from "react";
import { ErrorText, Loading } from "@/components/widgets";
import { useTRPC } from "@/lib/trpc";
import { aboutProvider, PROVIDER_ABOUTS } from "@/server/platform/about";
import type { AppRouter } from "@/server/transports/trpc/router";
import { ChartFigure, DataTable, DayBars, dayLabel, HEALTH_COLORS, HealthTimeline, healthWord, Legend, NoData, percent, RateBars, type Series } from "./overview-charts";
import styles from "./overview.module.css";

// The overview below the counters: what needs attention, the setup steps left, and the charts
// of the last 14 days (stats.overview, bucketed at midnight in the browser's time zone).

type Stats = inferRouterOutputs<AppRouter>["stats"]["overview"];
type StatsLine = Stats["lines"][number];

const lineName = (l: Pick<StatsLine, "label" | "handle" | "is_sandbox">) => (l.is_sandbox ? `Sandbox (${l.handle})` : l.label ? `${l.label} (${l.handle})` : l.handle);

const browserZone = () => {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
  } catch {
    return "UTC";
  }
};

const when = (ms: number | null) => (ms ? new Date(ms).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" }) : null);

export function OverviewPanels() {
  const trpc = useTRPC();
  const [timeZone] = useState(browserZone);
  const stats = useQuery({ ...trpc.stats.overview.queryOptions({ time_zone: timeZone }), refetchInterval: 60_000 });
  if (stats.error) return <ErrorText error={stats.error} />;
  if (!stats.data) {
    return (
      <div className="panel" data-testid="overview-loading">
        <Loading what="Loading the last 14 days" />
      </div>
    );
  }
  const s = stats.data;
  return (
    <>
      <Attention stats={s} />
      <GetStarted setup={s.setup} />
      <h2 className={styles.chartsHeading}>Last 14 days</h2>
      <p className="small muted">
        Days start at midnight in {s.time_zone === timeZone ? "your time zone" : "UTC"} ({s.time_zone}).
      </p>
      <div className={styles.charts}>
        <MessagesChart stats={s} />
        <HealthChart stats={s} />
        <DeliveryChart stats={s} />
        <WebhooksChart stats={s} />
      </div>
    </>
  );
}

function Attention({ stats }: { stats: Stats }) {
  const { lines, webhooks } = stats.attention;
  if (!lines.length && !webhooks.length) return null;
  const lineOf = (id: string) => stats.lines.find((l) => l.id === id);
  return (
    <section className="panel" aria-labelledby="attention-title" data-testid="needs-attention">
      <h2 id="attention-title">Needs attention</h2>
      <ul className={styles.list}>
        {lines.map((l) => (
          <li key={l.id}>
            <span className={`badge ${l.status === "disconnected" ? "bad" : "warn"}`}>{l.status}</span>{" "}
            <strong>{lineName({ ...l, is_sandbox: false })}</strong> ({aboutProvider(l.provider)?.short ?? l.provider})
            {l.status === "disconnected" ? " is disconnected: sends wait until it is back" : " is degraded"}
            {l.reason ? <>: {l.reason}</> : null}.{" "}
            {l.since ? <span className="small muted">Since {when(l.since)}. </span> : null}
            <Link href="/dashboard/lines">Check it on the Lines page</Link>
          </li>
        ))}
        {webhooks.map((w) => {
          const line = lineOf(w.line_id);
          return (
            <li key={w.id}>
              <span className={`badge ${w.is_active ? "warn" : "bad"}`}>{w.is_active ? "failing" : "disabled"}</span> Webhook{" "}
              <span className="mono">{w.url}</span>
              {line ? <> on {lineName(line)}</> : null}
              {w.is_active ? "" : ` is disabled${w.disabled_reason ? `: ${w.disabled_reason}` : ""}`}
              {w.is_active && w.failing_since ? ` has been failing since ${when(w.failing_since)}` : ""}
              {w.failed_recently ? `; ${w.failed_recently} ${w.failed_recently === 1 ? "delivery" : "deliveries"} failed for good in the last 7 days` : ""}
              {w.last_error ? ` (last error: ${w.last_error})` : ""}.{" "}
              <Link href={`/dashboard/webhooks/${w.id}`}>See its deliveries</Link>
            </li>
          );
        })}
      </ul>
    </section>
  );
}

const PROVIDER_NAMES = PROVIDER_ABOUTS.filter((p) => p.monitored).map((p) => p.short);
const providerList = `${PROVIDER_NAMES.slice(0, -1).join(", ")} or ${PROVIDER_NAMES.at(-1)}`;

function GetStarted({ setup }: { setup: Stats["setup"] }) {
  const sim = setup.simulator_enabled;
  const steps = [
    {
      done: setup.line,
      body: sim ? (
        <>
          <Link href="/dashboard/lines">Create a line</Link>: a simulated one, or connect one to {providerList} (or use the <Link href="/dashboard/sandbox">sandbox</Link> with
          your own phone).
        </>
      ) : (
        <>
          <Link href="/dashboard/lines">Connect a line</Link> to {providerList} on the Lines page.
        </>
      ),
    },
    {
      done: setup.key,
      body: (
        <>
          <Link href="/dashboard/keys">Create an API key</Link> and call <code>GET /v1/lines</code> with <code>Authorization: Bearer sk_live_…</code>.
        </>
      ),
    },
    {
      done: setup.message,
      body: sim ? (
        <>
          Text the line from the <Link href="/dashboard/simulator">simulator</Link> and reply from <Link href="/dashboard/chats">Chats</Link>.
        </>
      ) : (
        <>
          Send a first message with <code>POST /v1/messages</code> (to someone who texted the line first), or text the line from a phone; conversations appear in{" "}
          <Link href="/dashboard/chats">Chats</Link>.
        </>
      ),
    },
    {
      done: setup.webhook,
      body: (
        <>
          <Link href="/dashboard/webhooks">Add a webhook</Link> to receive events in your program.
        </>
      ),
    },
  ];
  const left = steps.filter((s) => !s.done).length;
  if (!left) return null;
  return (
    <section className="panel" aria-labelledby="get-started-title" data-testid="get-started">
      <h2 id="get-started-title">Get started</h2>
      <p className="small muted">
        {steps.length - left} of {steps.length} done.
      </p>
      <ol className={styles.steps}>
        {steps.map((step, i) => (
          <li key={i} className={step.done ? styles.stepDone : undefined}>
            <span className={`${styles.mark} ${step.done ? styles.markDone : ""}`} aria-hidden="true">
              {step.done ? "✓" : i + 1}
            </span>
            <span>
              <span className={styles.srOnly}>{step.done ? "Done: " : "To do: "}</span>
              {step.body}
            </span>
          </li>
        ))}
      </ol>
    </section>
  );
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

const MESSAGE_SERIES: Series[] = [
  { key: "sent", label: "Sent", color: "var(--chart-sent)" },
  { key: "received", label: "Received", color: "var(--chart-received)" },
];

function MessagesChart({ stats }: { stats: Stats }) {
  const [lineId, setLineId] = useState("");
  const shown = lineId ? stats.messages.filter((m) => m.line_id === lineId) : stats.messages;
  const data = useMemo(
    () =>
      stats.days.map((day, i) => ({
        day,
        sent: sum(shown.map((m) => m.sent[i]!)),
        received: sum(shown.map((m) => m.received[i]!)),
      })),
    [stats.days, shown],
  );
  const sent = sum(data.map((d) => d.sent));
  const received = sum(data.map((d) => d.received));
  const busiest = data.reduce((a, b) => (b.sent + b.received > a.sent + a.received ? b : a), data[0]!);
  const which = lineId ? lineName(stats.lines.find((l) => l.id === lineId)!) : "all lines";
  const summary = sent + received ? `${which}: ${sent} sent and ${received} received in 14 days; the busiest day was ${dayLabel(busiest.day)} (${busiest.sent + busiest.received}).` : undefined;
  const withMessages = stats.lines.filter((l) => stats.messages.some((m) => m.line_id === l.id));
  return (
    <ChartFigure
      title="Messages per day"
      summary={summary && summary.charAt(0).toUpperCase() + summary.slice(1)}
      testId="chart-messages"
      controls={
        withMessages.length > 1 ? (
          <label className="small" style={{ flexDirection: "row", alignItems: "center", gap: "0.4rem", fontWeight: 400 }}>
            Line
            <select value={lineId} onChange={(e) => setLineId(e.target.value)} style={{ maxWidth: 180 }}>
              <option value="">All lines</option>
              {withMessages.map((l) => (
                <option key={l.id} value={l.id}>
                  {lineName(l)}
                </option>
              ))}
            </select>
          </label>
        ) : null
      }
      note="Messages stored on your lines, by the time they were sent: sent from the line (by the API or typed on the device) and received from contacts."
      table={<DataTable caption={`Messages per day, ${which}`} columns={["Day", "Sent", "Received"]} rows={data.map((d) => [dayLabel(d.day), d.sent, d.received])} />}
    >
      {sent + received ? (
        <>
          <DayBars data={data} series={MESSAGE_SERIES} />
          <Legend items={MESSAGE_SERIES} />
        </>
      ) : (
        <NoData>No messages were sent or received in the last 14 days{lineId ? " on this line" : ""}.</NoData>
      )}
    </ChartFigure>
  );
}

const DELIVERY_SERIES: Series[] = [
  { key: "delivered", label: "Delivered", color: "var(--chart-ok)" },
  { key: "sent", label: "Sent (accepted)", color: "var(--chart-sent)" },
  { key: "undelivered", label: "Undelivered", color: "var(--chart-warn)" },
  { key: "failed", label: "Failed", color: "var(--chart-bad)" },
];
const RATE_LEGEND = { label: "Success rate (right axis)", color: "var(--chart-rate)" };

function DeliveryChart({ stats }: { stats: Stats }) {
  const d = stats.delivery;
  const good = sum(d.map((x) => x.sent + x.delivered));
  const total = good + sum(d.map((x) => x.undelivered + x.failed));
  const summary = total
    ? `${good} of ${total} messages whose send finished in 14 days went out (${percent(good / total)}): ${sum(d.map((x) => x.delivered))} confirmed delivered, ${sum(d.map((x) => x.undelivered))} undelivered, ${sum(d.map((x) => x.failed))} failed.`
    : undefined;
  return (
    <ChartFigure
      title="Delivery success"
      summary={summary}
      testId="chart-delivery"
      note={
        <>
          Each day counts the messages whose send finished that day (reactions, typing and receipts left out; sends still waiting count when they finish). Success = sent
          (the provider accepted it) or delivered (the provider confirmed it, e.g. SMS), over everything that finished, including undelivered (accepted, then reported
          undelivered) and failed (never sent).
        </>
      }
      table={
        <DataTable
          caption="Message sends per day"
          columns={["Day", "Delivered", "Sent (accepted)", "Undelivered", "Failed", "Success rate"]}
          rows={d.map((x) => [dayLabel(x.day), x.delivered, x.sent, x.undelivered, x.failed, percent(x.rate)])}
        />
      }
    >
      {total ? (
        <>
          <RateBars data={d} series={DELIVERY_SERIES} />
          <Legend items={[...DELIVERY_SERIES, RATE_LEGEND]} />
        </>
      ) : (
        <NoData>No message sends finished in the last 14 days, so there is no success rate yet.</NoData>
      )}
    </ChartFigure>
  );
}

const WEBHOOK_SERIES: Series[] = [
  { key: "succeeded", label: "Delivered", color: "var(--chart-ok)" },
  { key: "retrying", label: "Retrying", color: "var(--chart-warn)" },
  { key: "failed", label: "Failed", color: "var(--chart-bad)" },
];

function WebhooksChart({ stats }: { stats: Stats }) {
  const d = stats.webhooks;
  const ok = sum(d.map((x) => x.succeeded));
  const total = ok + sum(d.map((x) => x.failed + x.retrying));
  const summary = total
    ? `${ok} of ${total} webhook deliveries in 14 days were accepted (${percent(ok / total)}); ${sum(d.map((x) => x.failed))} failed and ${sum(d.map((x) => x.retrying))} are still being retried.`
    : undefined;
  return (
    <ChartFigure
      title="Webhook success"
      summary={summary}
      testId="chart-webhooks"
      note="Each day counts the events sent to your webhooks that day. Success = your endpoint answered 2xx, at once or on a retry; failed = the retries ran out or it answered 410 Gone; retrying = tried, not yet accepted. Events not tried yet are left out."
      table={
        <DataTable
          caption="Webhook deliveries per day"
          columns={["Day", "Delivered", "Retrying", "Failed", "Success rate"]}
          rows={d.map((x) => [dayLabel(x.day), x.succeeded, x.retrying, x.failed, percent(x.rate)])}
        />
      }
    >
      {total ? (
        <>
          <RateBars data={d} series={WEBHOOK_SERIES} />
          <Legend items={[...WEBHOOK_SERIES, RATE_LEGEND]} />
        </>
      ) : (
        <NoData>
          {stats.setup.webhook ? (
            "No events were sent to your webhooks in the last 14 days."
          ) : (
            <>
              No webhooks yet: <Link href="/dashboard/webhooks">add one</Link> to receive events.
            </>
          )}
        </NoData>
      )}
    </ChartFigure>
  );
}

const HEALTH_LEGEND = [
  { label: "Connected", color: HEALTH_COLORS.connected! },
  { label: "Degraded", color: HEALTH_COLORS.degraded! },
  { label: "Disconnected", color: HEALTH_COLORS.disconnected! },
  { label: "No line yet", color: HEALTH_COLORS.none! },
];

function HealthChart({ stats }: { stats: Stats }) {
  const rows = stats.health.map((h) => {
    const line = stats.lines.find((l) => l.id === h.line_id)!;
    return { name: lineName(line), short: line.label || line.handle, statuses: h.statuses };
  });
  const troubled = rows.filter((r) => r.statuses.some((s) => s === "degraded" || s === "disconnected"));
  const summary = !rows.length
    ? undefined
    : troubled.length
      ? `${troubled.length} of ${rows.length} ${rows.length === 1 ? "line was" : "lines were"} degraded or disconnected on some days: ${troubled
          .map((r) => {
            const n = r.statuses.filter((s) => s === "degraded" || s === "disconnected").length;
            return `${r.name} (${n} ${n === 1 ? "day" : "days"})`;
          })
          .join(", ")}.`
      : `${rows.length === 1 ? "The line was" : `All ${rows.length} lines were`} connected every day.`;
  return (
    <ChartFigure
      title="Line health"
      summary={summary}
      testId="chart-health"
      note="Each day shows the worst status the line had that day. Changes are recorded from this version on and kept 30 days; simulated lines are always connected."
      table={
        <DataTable
          caption="Line health per day (worst status of the day)"
          columns={["Day", ...rows.map((r) => r.name)]}
          rows={stats.days.map((day, i) => [dayLabel(day), ...rows.map((r) => healthWord(r.statuses[i] ?? null))])}
        />
      }
    >
      {rows.length ? (
        <>
          <HealthTimeline rows={rows} days={stats.days} />
          <Legend items={HEALTH_LEGEND} />
        </>
      ) : (
        <NoData>
          No lines yet:{" "}
          <Link href="/dashboard/lines">add one on the Lines page</Link>.
        </NoData>
      )}
    </ChartFigure>
  );
}

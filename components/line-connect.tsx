"use client";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import type { inferRouterOutputs } from "@trpc/server";
import { type FormEvent, useState } from "react";
import { ErrorText } from "@/components/ui";
import { useTRPC } from "@/lib/trpc";
import type { AppRouter } from "@/server/transports/trpc/router";
import { aboutProvider, type ConnectionField, PROVIDER_ABOUTS } from "@/server/platform/about";

// A line's provider and health on the lines page, and the "Connect a line" form: connect a
// line to a provider (or back to simulated) and test the connection. The provider's secrets
// are typed here, sent once, cleared, and never shown again (the server never returns them).

type Outputs = inferRouterOutputs<AppRouter>;
export type LineConnection = Outputs["lines"]["connections"][number];
type Report = Outputs["lines"]["connect"];

/** The providers, as each describes itself (server/platform/about.ts: plain data, no server code). */
const PROVIDERS = PROVIDER_ABOUTS;
/** What the form offers first: the first provider whose lines live outside this process. */
const FIRST_MONITORED = PROVIDERS.find((p) => p.monitored)!.name;

export const providerLabel = (name: string, short = false) => {
  const p = PROVIDERS.find((x) => x.name === name);
  return p ? (short ? p.short : p.label) : name;
};

const TONE: Record<string, "ok" | "warn" | "bad"> = { connected: "ok", degraded: "warn", disconnected: "bad" };

/** connected (green), degraded (amber), disconnected (red); the reason on hover and, when asked, below. */
export function LineHealth({ status, reason, showReason = false }: { status: string; reason: string | null; showReason?: boolean }) {
  return (
    <>
      <span className={`badge ${TONE[status] ?? "warn"}`} title={reason ?? undefined} data-testid="line-health">
        {status}
      </span>
      {showReason && reason ? <div className="small muted">{reason}</div> : null}
    </>
  );
}

const CAPABILITIES: [key: string, label: string][] = [
  ["private_api", "Private API"],
  ["helper_connected", "Private API helper connected"],
  ["reactions", "Reactions"],
  ["typing", "Typing indicators"],
  ["read_receipts", "Read receipts"],
  ["replies", "Replies"],
  ["voice_memos", "Voice memos"],
  ["imessage_availability", "iMessage availability checks"],
  ["detected_imessage", "iMessage account"],
  ["server_version", "Server version"],
  ["os_version", "macOS version"],
  ["attachments", "Attachments"],
  ["mms", "MMS"],
  ["group_messages", "Group messages"],
  ["delivery_reports", "Delivery reports"],
  ["messaging_service", "Messaging Service"],
  ["sender", "Sends from"],
  ["account_sid", "Account SID"],
  ["gateway_version", "Gateway app version"],
  ["gateway_health", "Gateway health"],
  ["webhooks_registered", "Webhooks registered"],
  ["webhook_url_accepted", "Inbound URL callable by the phone"],
  ["simulated", "Simulated platform"],
];

/** What a probe found, as a small list: known capabilities first, in a fixed order. */
function CapabilityList({ capabilities }: { capabilities: Record<string, unknown> | null | undefined }) {
  const entries = Object.entries(capabilities ?? {});
  if (!entries.length) return null;
  const known = new Map(CAPABILITIES);
  const ordered = [
    ...CAPABILITIES.filter(([key]) => key in (capabilities ?? {})).map(([key, label]) => [label, capabilities![key]] as const),
    ...entries.filter(([key]) => !known.has(key)).map(([key, value]) => [key, value] as const),
  ];
  return (
    <ul className="small" aria-label="Capabilities" style={{ margin: 0, paddingLeft: "1.2rem" }}>
      {ordered.map(([label, value]) => (
        <li key={label}>
          {label}:{" "}
          {typeof value === "boolean" ? (
            <span className={value ? "ok" : "error"}>{value ? "yes" : "no"}</span>
          ) : (
            <span className="mono">{value === null || value === undefined ? "—" : String(value)}</span>
          )}
        </li>
      ))}
    </ul>
  );
}

/** The result of Test connection: ok or failed, the line's health, the reason, capabilities and warnings. */
function ProbeResult({ report }: { report: Report }) {
  const { probe, line, warnings } = report;
  return (
    <div className="panel stack" role="status" aria-label="Connection result" data-testid="connection-result" style={{ marginBottom: 0 }}>
      <div className="row">
        <strong className={probe.ok ? "ok" : "error"}>{probe.ok ? "Connection OK" : "Connection failed"}</strong>
        <span className="small muted">
          {line.handle} on {providerLabel(line.provider)}:
        </span>
        <LineHealth status={line.status} reason={line.status_reason} />
      </div>
      {probe.reason ? <p className="small" style={{ margin: 0 }}>{probe.reason}</p> : null}
      <CapabilityList capabilities={probe.capabilities} />
      {warnings.length ? (
        <ul className="small" aria-label="Warnings" style={{ margin: 0, paddingLeft: "1.2rem", color: "var(--warn)" }}>
          {warnings.map((w) => (
            <li key={w}>{w}</li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

const lineName = (l: LineConnection) => (l.label ? `${l.label} (${l.handle})` : l.handle);

/** A saved setting is shown again unless it was masked (a URL that carried credentials). */
function savedSetting(line: LineConnection | undefined, provider: string, key: string): string {
  const value = line?.provider === provider ? line.provider_settings[key] : undefined;
  if (value === undefined || value === null) return "";
  const text = String(value);
  return text.includes("***") ? "" : text;
}

/**
 * Connect a line: choose the line and its provider, then the provider's settings (server URL,
 * credentials, ...). Test connection saves and probes new settings (lines.connect), or probes
 * the saved ones again when nothing was changed and no secret typed (lines.test).
 */
export function ConnectLineForm({ lines }: { lines: LineConnection[] }) {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const [lineId, setLineId] = useState<string | null>(null);
  // null: as saved on the line.
  const [provider, setProvider] = useState<string | null>(null);
  // Typed values by field key; a key absent shows the saved setting (secrets: empty).
  const [typed, setTyped] = useState<Record<string, string>>({});
  const [report, setReport] = useState<Report | null>(null);

  const line = lines.find((l) => l.id === lineId) ?? lines[0];
  const chosenProvider = provider ?? line?.provider ?? FIRST_MONITORED;
  const chosen = aboutProvider(chosenProvider);
  const fields: readonly ConnectionField[] = chosen?.fields ?? [];
  const saved = line?.provider === chosenProvider && !!chosen?.monitored;
  const shown = (f: ConnectionField) => typed[f.key] ?? (f.secret ? "" : savedSetting(line, chosenProvider, f.key));
  const unchanged = !!line && chosenProvider === line.provider && fields.every((f) => shown(f) === (f.secret ? "" : savedSetting(line, chosenProvider, f.key)));
  // Nothing new to save: probe what is saved.
  const testSaved = unchanged;
  const switchingToSimulated = !!line && !!chosen && !chosen.monitored && line.provider !== chosenProvider;

  const clear = () => {
    setProvider(null);
    setTyped({});
  };
  const done = (r: Report) => {
    setReport(r);
    clear();
    void qc.invalidateQueries({ queryKey: trpc.lines.connections.queryKey() });
    void qc.invalidateQueries({ queryKey: trpc.lines.list.queryKey() });
  };
  const connect = useMutation(trpc.lines.connect.mutationOptions({ onSuccess: done }));
  const test = useMutation(trpc.lines.test.mutationOptions({ onSuccess: done }));
  const pending = connect.isPending || test.isPending;

  function choose(id: string) {
    setLineId(id);
    clear();
    setReport(null);
    connect.reset();
    test.reset();
  }

  function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    if (!line) return;
    setReport(null);
    if (testSaved) {
      connect.reset();
      test.mutate({ line_id: line.id });
      return;
    }
    test.reset();
    const providerConfig: Record<string, unknown> = {};
    for (const f of fields) {
      const value = shown(f).trim();
      if (value === "" && f.optional) continue;
      providerConfig[f.key] = f.type === "number" ? Number(value) : f.secret ? shown(f) : value;
    }
    connect.mutate({ line_id: line.id, provider: chosenProvider, provider_config: providerConfig });
  }

  if (!lines.length) return null;
  return (
    <form className="panel stack" onSubmit={submit} aria-label="Connect a line" autoComplete="off">
      <h2>Connect a line</h2>
      <p className="small muted">
        Carry a line through a provider: BlueBubbles Server on a Mac sends and receives its iMessage (and SMS through a paired iPhone); SMS Gateway for
        Android sends and receives SMS through an Android phone; Twilio sends SMS and MMS from a Twilio number. Passwords, keys and tokens are stored
        encrypted and never shown again. Choose Simulated to switch a line back to the built-in platform.
      </p>
      <div className="row">
        <label>
          Line
          <select value={line?.id ?? ""} onChange={(e) => choose(e.target.value)} required>
            {lines.map((l) => (
              <option key={l.id} value={l.id}>
                {lineName(l)}
              </option>
            ))}
          </select>
        </label>
        <label>
          Provider
          <select value={chosenProvider} onChange={(e) => setProvider(e.target.value)}>
            {PROVIDERS.map((p) => (
              <option key={p.name} value={p.name}>
                {p.label}
              </option>
            ))}
          </select>
        </label>
        {line ? (
          <div className="small" style={{ alignSelf: "end" }}>
            Now: {providerLabel(line.provider)} <LineHealth status={line.status} reason={line.status_reason} />
          </div>
        ) : null}
      </div>
      {fields.length ? (
        <div className="row" style={{ flexWrap: "wrap" }}>
          {fields.map((f) => (
            <label key={`${chosenProvider}.${f.key}`} style={f.width ? { flex: 1, minWidth: f.width } : undefined}>
              {f.label}
              <input
                type={f.type}
                value={shown(f)}
                onChange={(e) => setTyped({ ...typed, [f.key]: e.target.value })}
                required={f.secret ? !testSaved : !f.optional}
                placeholder={f.secret && saved ? "saved (type to change)" : f.placeholder}
                spellCheck={false}
                maxLength={500}
                {...(f.secret ? { autoComplete: "new-password" } : {})}
                {...(f.type === "number" ? { min: f.min, max: f.max, step: 1, style: { width: f.width } } : {})}
              />
            </label>
          ))}
        </div>
      ) : null}
      {saved && fields.some((f) => f.secret) ? (
        <p className="small muted" style={{ margin: 0 }}>
          Leave the secrets empty to test the saved connection; type them to save changed settings.
        </p>
      ) : null}
      <ErrorText error={connect.error ?? test.error} />
      <div>
        <button className="primary" type="submit" disabled={pending || !line}>
          {pending ? "Testing…" : switchingToSimulated ? `Switch to ${chosen!.short.toLowerCase()}` : "Test connection"}
        </button>
      </div>
      {report ? <ProbeResult report={report} /> : null}
    </form>
  );
}

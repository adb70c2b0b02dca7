"use client";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import type { inferRouterOutputs } from "@trpc/server";
import { type FormEvent, useState } from "react";
import { useDashboardSettings } from "@/components/dashboard-settings";
import { ErrorText, ShortWarning } from "@/components/widgets";
import { useTRPC } from "@/lib/trpc";
import type { AppRouter } from "@/server/transports/trpc/router";
import { aboutProvider, type ConnectionField, explainProblem, PROVIDER_ABOUTS } from "@/server/platform/about";

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

interface ResultView {
  saved: boolean;
  provider: string;
  probe: Report["probe"];
  warnings: string[];
  line: { handle: string; provider: string; status: string; status_reason: string | null } | null;
}

/**
 * The result of a connection test: ok or failed (and whether anything was saved), what it means
 * and how to fix it in words, the provider's own reason on demand, capabilities and warnings.
 * A failed test that saved nothing offers "Save anyway".
 */
export function ProbeResult({ result, onSaveAnyway, saving }: { result: ResultView; onSaveAnyway?: () => void; saving?: boolean }) {
  const { probe, line, warnings } = result;
  const explained = probe.ok ? null : explainProblem(result.provider, probe.reason);
  return (
    <div className="panel stack" role="status" aria-label="Connection result" data-testid="connection-result" style={{ marginBottom: 0 }}>
      <div className="row">
        <strong className={probe.ok ? "ok" : "error"}>
          {probe.ok ? "Connection OK" : result.saved ? "Connection failed (saved as you asked)" : "Connection failed: nothing was saved"}
        </strong>
        {line && result.saved ? (
          <>
            <span className="small muted">
              {line.handle} on {providerLabel(line.provider)}:
            </span>
            <LineHealth status={line.status} reason={line.status_reason} />
          </>
        ) : null}
      </div>
      {explained ? <p style={{ margin: 0 }}>{explained}</p> : null}
      {probe.reason ? (
        explained ? (
          <details className="small">
            <summary>What {providerLabel(result.provider, true)} said</summary>
            <span className="mono">{probe.reason}</span>
          </details>
        ) : (
          <p className="small" style={{ margin: 0 }}>
            {probe.reason}
          </p>
        )
      ) : null}
      <CapabilityList capabilities={probe.capabilities} />
      {warnings.map((w) => (
        <ShortWarning key={w} text={w} />
      ))}
      {!probe.ok && !result.saved && onSaveAnyway ? (
        <div className="row">
          <button type="button" className="danger" onClick={onSaveAnyway} disabled={saving}>
            Save anyway
          </button>
          <span className="small muted">The line will be degraded until the connection works.</span>
        </div>
      ) : null}
    </div>
  );
}

/** The provider's connection settings as inputs; secrets start empty (saved ones are never shown). */
export function ProviderFields({
  provider,
  value,
  onChange,
  secretsSaved,
  secretsRequired,
}: {
  provider: string;
  value: (f: ConnectionField) => string;
  onChange: (key: string, value: string) => void;
  secretsSaved: boolean;
  secretsRequired: boolean;
}) {
  const fields = aboutProvider(provider)?.fields ?? [];
  if (!fields.length) return null;
  return (
    <div className="row" style={{ flexWrap: "wrap" }}>
      {fields.map((f) => (
        <label key={`${provider}.${f.key}`} style={f.width ? { flex: 1, minWidth: Math.min(f.width, 260) } : undefined}>
          <span>
            {f.label}
            {f.optional ? <span className="small muted"> (optional)</span> : null}
          </span>
          <input
            type={f.type}
            value={value(f)}
            onChange={(e) => onChange(f.key, e.target.value)}
            required={f.secret ? secretsRequired : !f.optional}
            placeholder={f.secret && secretsSaved ? "saved (type to change)" : f.placeholder}
            spellCheck={false}
            maxLength={500}
            {...(f.secret ? { autoComplete: "new-password" } : {})}
            {...(f.type === "number" ? { min: f.min, max: f.max, step: 1 } : {})}
          />
        </label>
      ))}
    </div>
  );
}

/** The typed settings as provider_config: numbers as numbers, empty optional fields left out. */
export function providerConfigOf(provider: string, value: (f: ConnectionField) => string): Record<string, unknown> {
  const config: Record<string, unknown> = {};
  for (const f of aboutProvider(provider)?.fields ?? []) {
    const raw = value(f);
    const v = f.secret ? raw : raw.trim();
    if (v === "" && f.optional) continue;
    config[f.key] = f.type === "number" ? Number(v) : v;
  }
  return config;
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
 * credentials, ...). Test connection tests new settings before saving them (lines.connect: a
 * failing test saves nothing, and "Save anyway" saves it), or probes the saved ones again when
 * nothing was changed (lines.test). Moving a line to another provider asks first.
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
  const [confirming, setConfirming] = useState(false);
  // With the simulator off nothing offers simulated lines (a line there could never receive).
  const { simulator } = useDashboardSettings();
  const offered = PROVIDERS.filter((p) => p.monitored || simulator || p.name === lines.find((l) => l.id === lineId)?.provider);

  const line = lines.find((l) => l.id === lineId) ?? lines[0];
  const chosenProvider = provider ?? line?.provider ?? FIRST_MONITORED;
  const chosen = aboutProvider(chosenProvider);
  const fields: readonly ConnectionField[] = chosen?.fields ?? [];
  const saved = line?.provider === chosenProvider && !!chosen?.monitored;
  const shown = (f: ConnectionField) => typed[f.key] ?? (f.secret ? "" : savedSetting(line, chosenProvider, f.key));
  // Nothing new to save: probe what is saved.
  const testSaved = !!line && chosenProvider === line.provider && fields.every((f) => shown(f) === (f.secret ? "" : savedSetting(line, chosenProvider, f.key)));
  const switching = !!line && line.provider !== chosenProvider;

  const clear = () => {
    setProvider(null);
    setTyped({});
    setConfirming(false);
  };
  const done = (r: Report) => {
    setReport(r);
    // A test that saved nothing keeps what was typed, to fix it or save it anyway.
    if (r.saved) clear();
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

  function run(saveFailing: boolean) {
    if (!line) return;
    setReport(null);
    setConfirming(false);
    if (testSaved) {
      connect.reset();
      test.mutate({ line_id: line.id });
      return;
    }
    test.reset();
    connect.mutate({ line_id: line.id, provider: chosenProvider, provider_config: providerConfigOf(chosenProvider, shown), save_failing: saveFailing });
  }

  function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    // Moving a line to another provider changes where its messages go: ask first.
    if (switching && !confirming) return setConfirming(true);
    run(false);
  }

  if (!lines.length) return null;
  return (
    <form className="panel stack" onSubmit={submit} aria-label="Connect a line" autoComplete="off">
      <h2>Connect a line</h2>
      <p className="small muted">
        Change the provider or settings of an existing line. The connection is tested before anything is saved. Passwords, keys and tokens are
        stored encrypted and never shown again.
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
          <select
            value={chosenProvider}
            onChange={(e) => {
              setProvider(e.target.value);
              setConfirming(false);
            }}
          >
            {offered.map((p) => (
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
      <ProviderFields
        provider={chosenProvider}
        value={shown}
        onChange={(key, value) => setTyped({ ...typed, [key]: value })}
        secretsSaved={saved}
        secretsRequired={!testSaved}
      />
      {saved && fields.some((f) => f.secret) ? (
        <p className="small muted" style={{ margin: 0 }}>
          Leave the secrets empty to test the saved connection; type them to save changed settings.
        </p>
      ) : null}
      <ErrorText error={connect.error ?? test.error} />
      {confirming && line ? (
        <div className="panel stack confirm" role="alertdialog" aria-label="Confirm the switch">
          <strong>
            Move {line.handle} from {providerLabel(line.provider)} to {providerLabel(chosenProvider)}?
          </strong>
          <span className="small">
            Its messages will go through {providerLabel(chosenProvider)} from now on{chosen?.monitored ? ", once the connection test passes" : ""}.
          </span>
          <div className="row">
            <button type="submit" className="primary" disabled={pending}>
              {chosen?.monitored ? "Test and switch" : `Switch to ${providerLabel(chosenProvider, true)}`}
            </button>
            <button type="button" onClick={() => setConfirming(false)}>
              Cancel
            </button>
          </div>
        </div>
      ) : (
        <div>
          <button className="primary" type="submit" disabled={pending || !line}>
            {pending ? "Testing…" : switching && !chosen?.monitored ? `Switch to ${chosen!.short.toLowerCase()}` : "Test connection"}
          </button>
        </div>
      )}
      {report ? (
        <ProbeResult
          result={{ saved: report.saved, provider: report.saved ? report.line.provider : chosenProvider, probe: report.probe, warnings: report.warnings, line: report.line }}
          onSaveAnyway={() => run(true)}
          saving={pending}
        />
      ) : null}
    </form>
  );
}

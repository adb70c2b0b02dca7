"use client";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import type { inferRouterOutputs } from "@trpc/server";
import { type FormEvent, useState } from "react";
import { ErrorText } from "@/components/widgets";
import { useTRPC } from "@/lib/trpc";
import type { AppRouter } from "@/server/transports/trpc/router";
import { aboutProvider, type ConnectionField, PROVIDER_ABOUTS } from "@/server/platform/about";
import { ProbeResult, ProviderFields, providerConfigOf } from "./line-connect";

// "Add a line": choose the provider first, then its settings and the line's handle (or leave the
// handle to the provider when it names it: a BlueBubbles Mac's Apple ID). The connection is
// tested before anything is stored; a failing test stores nothing unless "Save anyway".

type AddReport = inferRouterOutputs<AppRouter>["lines"]["add"];

const PROVIDERS = PROVIDER_ABOUTS.filter((p) => p.monitored);

export function AddLineForm() {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const [provider, setProvider] = useState<string>(PROVIDERS[0]!.name);
  const [typed, setTyped] = useState<Record<string, string>>({});
  const [handle, setHandle] = useState("");
  const [label, setLabel] = useState("");
  const [report, setReport] = useState<AddReport | null>(null);
  const about = aboutProvider(provider);
  const value = (f: ConnectionField) => typed[f.key] ?? "";
  const add = useMutation(
    trpc.lines.add.mutationOptions({
      onSuccess: (r) => {
        setReport(r);
        if (!r.saved) return;
        setTyped({});
        setHandle("");
        setLabel("");
        void qc.invalidateQueries({ queryKey: trpc.lines.connections.queryKey() });
        void qc.invalidateQueries({ queryKey: trpc.lines.list.queryKey() });
      },
    }),
  );

  function run(saveFailing: boolean) {
    setReport(null);
    add.mutate({
      provider: provider as (typeof PROVIDERS)[number]["name"],
      provider_config: providerConfigOf(provider, value),
      handle: handle.trim() || undefined,
      label: label.trim() || null,
      save_failing: saveFailing,
    });
  }

  function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    run(false);
  }

  return (
    <form className="panel stack" onSubmit={submit} aria-label="Add a line" autoComplete="off">
      <h2>Add a line</h2>
      <p className="small muted">
        Connect a phone number or iMessage account through a provider. The connection is tested before anything is saved; passwords, keys and tokens are
        stored encrypted and never shown again.
      </p>
      <fieldset className="provider-choice">
        <legend>Provider</legend>
        {PROVIDERS.map((p) => (
          <label key={p.name} className="check">
            <input
              type="radio"
              name="add-provider"
              value={p.name}
              checked={provider === p.name}
              onChange={() => {
                setProvider(p.name);
                setTyped({});
                setReport(null);
                add.reset();
              }}
            />
            {p.label}
          </label>
        ))}
      </fieldset>
      <ProviderFields provider={provider} value={value} onChange={(key, v) => setTyped({ ...typed, [key]: v })} secretsSaved={false} secretsRequired />
      <div className="row">
        <label style={{ flex: 1, minWidth: 200 }}>
          {about?.handle?.label ?? "Handle"}
          <input value={handle} onChange={(e) => setHandle(e.target.value)} placeholder={about?.handle?.placeholder} maxLength={320} spellCheck={false} />
          {about?.handle ? <span className="small muted">{about.handle.help}</span> : null}
        </label>
        <label style={{ minWidth: 160 }}>
          <span>
            Label <span className="small muted">(optional)</span>
          </span>
          <input value={label} onChange={(e) => setLabel(e.target.value)} maxLength={100} placeholder="e.g. Support" />
        </label>
      </div>
      <ErrorText error={add.error} />
      <div>
        <button className="primary" type="submit" disabled={add.isPending}>
          {add.isPending ? "Testing…" : "Test and add"}
        </button>
      </div>
      {report ? (
        <ProbeResult
          result={{ saved: report.saved, provider, probe: report.probe, warnings: report.warnings, line: report.line }}
          onSaveAnyway={() => run(true)}
          saving={add.isPending}
        />
      ) : null}
      {report?.saved && report.line ? (
        <p className="ok small" role="status">
          Added {report.line.handle}.
        </p>
      ) : null}
    </form>
  );
}

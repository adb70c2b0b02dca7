"use client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { type FormEvent, useState } from "react";
import { ConnectLineForm, LineHealth, providerLabel } from "@/components/line-connect";
import { AddLineForm } from "@/components/line-add";
import { ListTable } from "@/components/table";
import { ErrorText, ShortWarning, StatusBadge, Time } from "@/components/widgets";
import { useDashboardSettings } from "@/components/dashboard-settings";
import { useTRPC } from "@/lib/trpc";
import styles from "@/components/lines.module.css";

function LabelEditor({ id, label, onSave }: { id: string; label: string | null; onSave: (id: string, label: string) => void }) {
  const [value, setValue] = useState(label ?? "");
  const dirty = value !== (label ?? "");
  return (
    <form
      className="row"
      onSubmit={(e) => {
        e.preventDefault();
        onSave(id, value);
      }}
    >
      <input aria-label="Label" value={value} onChange={(e) => setValue(e.target.value)} maxLength={100} placeholder="No label" className={styles.label} />
      {dirty ? <button type="submit">Save</button> : null}
    </form>
  );
}

export default function LinesPage() {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const { simulator } = useDashboardSettings();
  const lines = useQuery(trpc.lines.list.queryOptions());
  // The account's own lines with their provider settings (never a secret) and capabilities.
  const connections = useQuery(trpc.lines.connections.queryOptions());
  const connectionOf = (id: string) => connections.data?.find((c) => c.id === id);
  const refresh = () =>
    Promise.all([qc.invalidateQueries({ queryKey: trpc.lines.list.queryKey() }), qc.invalidateQueries({ queryKey: trpc.lines.connections.queryKey() })]);
  const create = useMutation(trpc.lines.create.mutationOptions({ onSuccess: refresh }));
  const update = useMutation(trpc.lines.update.mutationOptions({ onSuccess: refresh }));

  function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    create.mutate(
      {
        label: String(form.get("label") || "") || null,
        service: form.get("service") as "imessage" | "sms" | "auto",
        advanced_features: form.get("advanced") === "on",
      },
      { onSuccess: () => (e.target as HTMLFormElement).reset() },
    );
  }

  return (
    <>
      <h1>Lines</h1>
      <div className="panel">
        <ErrorText error={lines.error ?? connections.error ?? update.error} />
        <ListTable
          loading={lines.isPending}
          rows={lines.data?.data ?? []}
          empty={simulator ? "No lines yet: create one above." : "No lines yet."}
          headers={["Handle", "Label", "Provider", "Health", "Status", "Created", ""]}
          row={(l) => (
            <tr key={l.id}>
              <td className={styles.wrap}>
                {l.is_sandbox ? (
                  <span className="mono">{l.handle}</span>
                ) : (
                  <Link className="mono" href={`/dashboard/lines/${l.id}`}>
                    {l.handle}
                  </Link>
                )}
                <div className="small muted">
                  {[l.service, l.advanced_features ? "advanced" : null, l.is_sandbox ? "shared sandbox line" : null].filter(Boolean).join(" · ")}
                </div>
              </td>
              <td>{l.is_sandbox ? l.label : <LabelEditor id={l.id} label={l.label} onSave={(id, label) => update.mutate({ id, label })} />}</td>
              <td className={styles.wrap}>
                {providerLabel(l.provider, true)}
                {typeof connectionOf(l.id)?.provider_settings.url === "string" ? (
                  <div className="small muted mono">{String(connectionOf(l.id)!.provider_settings.url)}</div>
                ) : null}
                {connectionOf(l.id)?.warnings.map((w) => <ShortWarning key={w} text={w} />)}
              </td>
              <td>
                <LineHealth status={l.status} reason={l.status_reason} showReason />
                <div className="small muted">
                  Last event: <Time ms={l.last_event_at} />
                </div>
              </td>
              <td>
                <StatusBadge status={l.is_active ? "active" : "disabled"} />
              </td>
              <td>
                <Time ms={l.created_at} />
              </td>
              <td>
                <div className={styles.actions}>
                  <Link className="button" href={`/dashboard/chats?line=${encodeURIComponent(l.handle)}`}>
                    Chats
                  </Link>
                  {l.is_sandbox ? null : (
                    <Link className="button" href={`/dashboard/lines/${l.id}`} aria-label={`Send policy and capacity of ${l.handle}`}>
                      Policy
                    </Link>
                  )}
                  {l.is_sandbox ? null : l.is_active ? (
                    <button type="button" className="danger" onClick={() => confirm(`Deactivate ${l.handle}? Sends from it will be refused.`) && update.mutate({ id: l.id, is_active: false })}>
                      Deactivate
                    </button>
                  ) : (
                    <button type="button" onClick={() => update.mutate({ id: l.id, is_active: true })}>
                      Reactivate
                    </button>
                  )}
                </div>
              </td>
            </tr>
          )}
        />
      </div>
      <AddLineForm />
      <ConnectLineForm lines={connections.data ?? []} />
      {simulator ? (
      <form className="panel stack" onSubmit={submit} aria-label="Create a simulated line">
        <h2>Create a simulated line</h2>
        <p className="small muted">A line on the built-in simulated platform, with a free +1 555 01… number. Drive its other side from the simulator.</p>
        <div className="row">
          <label>
            Label
            <input name="label" maxLength={100} placeholder="e.g. Support" />
          </label>
          <label>
            Service
            <select name="service" defaultValue="imessage">
              <option value="imessage">iMessage</option>
              <option value="sms">SMS</option>
              <option value="auto">Auto</option>
            </select>
          </label>
          <label className="check" style={{ alignSelf: "end" }}>
            <input type="checkbox" name="advanced" /> Advanced features (reactions, typing, receipts)
          </label>
        </div>
        <ErrorText error={create.error} />
        <div>
          <button className="primary" type="submit" disabled={create.isPending}>
            Create line
          </button>
        </div>
      </form>
      ) : null}
    </>
  );
}

"use client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { type FormEvent, useState } from "react";
import { ListTable } from "@/components/table";
import { ErrorText, SecretOnce, StatusBadge, Time } from "@/components/widgets";
import { LineSelect, useLines } from "@/components/lines";
import { useTRPC } from "@/lib/trpc";
import { WEBHOOK_EVENTS } from "@/server/webhooks/event-names";

export default function WebhooksPage() {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const { lines } = useLines();
  const hooks = useQuery(trpc.webhooks.list.queryOptions({ limit: 100 }));
  const [secret, setSecret] = useState<string | null>(null);
  const [events, setEvents] = useState<Set<string>>(new Set(["message.received", "message.sent"]));
  const create = useMutation(
    trpc.webhooks.create.mutationOptions({
      onSuccess: (w) => {
        setSecret(w.secret ?? null);
        void qc.invalidateQueries({ queryKey: trpc.webhooks.list.queryKey() });
      },
    }),
  );
  const lineOf = (id: string | undefined) => lines.find((l) => l.id === id)?.handle ?? id;

  function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    create.mutate(
      { from: String(form.get("line")), url: String(form.get("url")), events: [...events] },
      { onSuccess: () => (e.target as HTMLFormElement).reset() },
    );
  }

  return (
    <>
      <h1>Webhooks</h1>
      {secret ? <SecretOnce title="Signing secret of the new webhook" secret={secret} onDone={() => setSecret(null)} /> : null}
      <form className="panel stack" onSubmit={submit} aria-label="Create a webhook">
        <h2>Add a webhook</h2>
        <div className="row">
          <LineSelect lines={lines} name="line" />
          <label style={{ flex: 1, minWidth: 240 }}>
            URL
            <input name="url" type="url" required placeholder="https://example.com/webhooks/relay" />
          </label>
        </div>
        <fieldset className="row" style={{ border: 0, padding: 0, margin: 0 }}>
          <legend className="small">Events</legend>
          {WEBHOOK_EVENTS.map((ev) => (
            <label key={ev} className="check">
              <input
                type="checkbox"
                checked={events.has(ev)}
                onChange={() => {
                  const next = new Set(events);
                  if (next.has(ev)) next.delete(ev);
                  else next.add(ev);
                  setEvents(next);
                }}
              />
              <span className="mono">{ev}</span>
            </label>
          ))}
        </fieldset>
        <ErrorText error={create.error} />
        <div>
          <button className="primary" type="submit" disabled={create.isPending || !events.size || !lines.length}>
            Add webhook
          </button>
        </div>
      </form>
      <div className="panel">
        <ErrorText error={hooks.error} />
        <ListTable
          loading={hooks.isPending}
          rows={hooks.data?.data ?? []}
          empty="No webhooks yet."
          headers={["URL", "Line", "Events", "Status", "Created"]}
          row={(w) => (
            <tr key={w.id}>
              <td>
                <Link href={`/dashboard/webhooks/${w.id}`} className="mono">
                  {w.url}
                </Link>
              </td>
              <td className="mono">{lineOf(w.line_ids[0])}</td>
              <td className="small">{w.events.join(", ")}</td>
              <td>
                <StatusBadge status={w.is_active ? "active" : "disabled"} />
                {w.disabled_reason ? <div className="small muted">{w.disabled_reason}</div> : null}
              </td>
              <td>
                <Time ms={w.created_at} />
              </td>
            </tr>
          )}
        />
      </div>
    </>
  );
}

"use client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { ListTable } from "@/components/table";
import { ErrorText, SecretOnce, StatusBadge, Time } from "@/components/ui";
import { lineName, useLines } from "@/components/lines";
import { useTRPC } from "@/lib/trpc";
import { SCOPES, type Scope } from "@/server/services/access/scopes";

const READ = SCOPES.filter((s) => s.endsWith(":read"));
const PRESETS: [string, readonly Scope[]][] = [
  ["Full access", SCOPES],
  ["Read only", READ],
  ["Send messages", ["messages:read", "messages:write", "chats:read", "lines:read", "outbox:read", "files:write"]],
];

export default function KeysPage() {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const keys = useQuery(trpc.keys.list.queryOptions());
  const { lines } = useLines();
  const refresh = () => qc.invalidateQueries({ queryKey: trpc.keys.list.queryKey() });
  const [secret, setSecret] = useState<{ name: string; secret: string } | null>(null);
  const create = useMutation(trpc.keys.create.mutationOptions({ onSuccess: (k) => (setSecret({ name: k.name, secret: k.secret }), refresh()) }));
  const revoke = useMutation(trpc.keys.revoke.mutationOptions({ onSuccess: refresh }));
  const replace = useMutation(trpc.keys.replace.mutationOptions({ onSuccess: (k) => (setSecret({ name: k.name, secret: k.secret }), refresh()) }));
  const [scopes, setScopes] = useState<Set<Scope>>(new Set(SCOPES));
  const [restrict, setRestrict] = useState<Set<string>>(new Set());

  function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    const expires = String(form.get("expires") || "");
    create.mutate(
      {
        name: String(form.get("name")),
        scopes: [...scopes],
        line_ids: restrict.size ? [...restrict] : null,
        expires_at: expires ? new Date(`${expires}T23:59:59`).getTime() : null,
      },
      { onSuccess: () => (e.target as HTMLFormElement).reset() },
    );
  }
  const toggle = <T,>(set: Set<T>, value: T) => {
    const next = new Set(set);
    if (next.has(value)) next.delete(value);
    else next.add(value);
    return next;
  };

  return (
    <>
      <h1>API keys</h1>
      {secret ? <SecretOnce title={`Your new key "${secret.name}"`} secret={secret.secret} onDone={() => setSecret(null)} /> : null}
      <form className="panel stack" onSubmit={submit} aria-label="Create an API key">
        <h2>Create a key</h2>
        <label>
          Name
          <input name="name" required maxLength={100} placeholder="e.g. production server" />
        </label>
        <fieldset className="stack" style={{ border: 0, padding: 0, margin: 0 }}>
          <legend className="small">Scopes</legend>
          <div className="row">
            {PRESETS.map(([label, preset]) => (
              <button key={label} type="button" onClick={() => setScopes(new Set(preset))}>
                {label}
              </button>
            ))}
          </div>
          <div className="row">
            {SCOPES.map((s) => (
              <label key={s} className="check">
                <input type="checkbox" checked={scopes.has(s)} onChange={() => setScopes(toggle(scopes, s))} />
                <span className="mono">{s}</span>
              </label>
            ))}
          </div>
        </fieldset>
        {lines.some((l) => !l.is_sandbox) ? (
          <fieldset className="stack" style={{ border: 0, padding: 0, margin: 0 }}>
            <legend className="small">Restrict to lines (none checked: every line)</legend>
            <div className="row">
              {lines
                .filter((l) => !l.is_sandbox)
                .map((l) => (
                  <label key={l.id} className="check">
                    <input type="checkbox" checked={restrict.has(l.id)} onChange={() => setRestrict(toggle(restrict, l.id))} />
                    {lineName(l)}
                  </label>
                ))}
            </div>
          </fieldset>
        ) : null}
        <label style={{ maxWidth: 220 }}>
          Expires (optional)
          <input name="expires" type="date" />
        </label>
        <ErrorText error={create.error} />
        <div>
          <button className="primary" type="submit" disabled={create.isPending || scopes.size === 0}>
            Create key
          </button>
        </div>
      </form>
      <div className="panel">
        <h2>Keys</h2>
        <ErrorText error={keys.error ?? revoke.error ?? replace.error} />
        <ListTable
          loading={keys.isPending}
          rows={keys.data ?? []}
          empty="No keys yet."
          headers={["Name", "Key", "Scopes", "Last used", "Created", "Status", ""]}
          row={(k) => (
                  <tr key={k.id}>
                    <td>{k.name}</td>
                    <td className="mono">{k.prefix}</td>
                    <td className="small">
                      {k.scopes.length === SCOPES.length ? "all" : k.scopes.join(", ")}
                      {k.line_ids ? <div className="muted">{k.line_ids.length} line(s)</div> : null}
                    </td>
                    <td>
                      <Time ms={k.last_used_at} />
                    </td>
                    <td>
                      <Time ms={k.created_at} />
                    </td>
                    <td>
                      <StatusBadge status={k.status} />
                      {k.expires_at && k.status === "active" ? (
                        <div className="small muted">
                          until <Time ms={k.expires_at} />
                        </div>
                      ) : null}
                    </td>
                    <td>
                      {k.status === "active" ? (
                        <div className="row">
                          <button type="button" onClick={() => confirm(`Replace "${k.name}"? The old key stops working now.`) && replace.mutate({ id: k.id })}>
                            Replace
                          </button>
                          <button type="button" className="danger" onClick={() => confirm(`Revoke "${k.name}"?`) && revoke.mutate({ id: k.id })}>
                            Revoke
                          </button>
                        </div>
                      ) : null}
                    </td>
                  </tr>
          )}
        />
      </div>
    </>
  );
}

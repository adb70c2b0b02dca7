"use client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { ListTable } from "@/components/table";
import { ErrorText, SecretOnce, StatusBadge, Time } from "@/components/widgets";
import { Dialog, DialogFormActions } from "@/components/dialog";
import { APPROVE_SCOPE, draftOf, type Guardrails, GuardrailsFields, guardrailsOf, GuardrailsSummary, isGuarded, NO_GUARDRAILS } from "@/components/guardrails";
import { lineName, useLines } from "@/components/lines";
import styles from "@/components/approvals.module.css";
import sending from "@/components/sending.module.css";
import { useTRPC } from "@/lib/trpc";
import { SCOPES, type Scope } from "@/server/services/access/scopes";

// API keys: create (scopes, lines, expiry and guardrails for a key an agent uses), list with
// each key's guardrails, change the guardrails, replace and revoke.

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
  const [guard, setGuard] = useState(NO_GUARDRAILS);
  const guardrails = guardrailsOf(guard);
  const guarded = isGuarded(guardrails);
  // A key with guardrails cannot approve sends or resume chats: the scope is left out while any is set.
  const chosen = [...scopes].filter((s) => !(guarded && s === APPROVE_SCOPE));
  const [editing, setEditing] = useState<{ id: string; name: string; scopes: string[]; guardrails: Guardrails } | null>(null);

  function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    const expires = String(form.get("expires") || "");
    create.mutate(
      {
        name: String(form.get("name")),
        scopes: chosen,
        line_ids: restrict.size ? [...restrict] : null,
        expires_at: expires ? new Date(`${expires}T23:59:59`).getTime() : null,
        ...(guarded ? { guardrails } : {}),
      },
      { onSuccess: () => ((e.target as HTMLFormElement).reset(), setGuard(NO_GUARDRAILS)) },
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
                <input
                  type="checkbox"
                  checked={chosen.includes(s)}
                  disabled={guarded && s === APPROVE_SCOPE}
                  onChange={() => setScopes(toggle(scopes, s))}
                  aria-describedby={s === APPROVE_SCOPE ? "approve-scope-note" : undefined}
                />
                <span className="mono">{s}</span>
              </label>
            ))}
          </div>
          {guarded ? (
            <p id="approve-scope-note" className={styles.scopeNote}>
              A key with guardrails cannot hold <span className="mono">{APPROVE_SCOPE}</span>: it could approve its own sends or resume a chat you paused.
            </p>
          ) : null}
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
        <GuardrailsFields legend="Guardrails (optional)" value={guard} onChange={setGuard} />
        <ErrorText error={create.error} />
        <div>
          <button className="primary" type="submit" disabled={create.isPending || chosen.length === 0}>
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
          headers={["Name", "Key", "Scopes", "Guardrails", "Last used", "Created", "Status", ""]}
          row={(k) => (
                  <tr key={k.id}>
                    <td id={`key-name-${k.id}`}>{k.name}</td>
                    <td className="mono">{k.prefix}</td>
                    <td className="small">
                      {scopeText(k.scopes)}
                      {k.line_ids ? <div className="muted">{k.line_ids.length} line(s)</div> : null}
                    </td>
                    <td>
                      <div className={styles.guardCell}>
                        <GuardrailsSummary g={k.guardrails} />
                        {k.status === "active" ? (
                          <button type="button" className={sending.smallButton} onClick={() => setEditing(k)} aria-label={`${isGuarded(k.guardrails) ? "Change" : "Add"} guardrails`} aria-describedby={`key-name-${k.id}`}>
                            {isGuarded(k.guardrails) ? "Change" : "Add"}
                          </button>
                        ) : null}
                      </div>
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
      <Dialog open={editing !== null} onClose={() => setEditing(null)} title={editing ? `Guardrails of “${editing.name}”` : "Guardrails"}>
        {editing ? <EditGuardrails apiKey={editing} onDone={() => (setEditing(null), refresh())} onCancel={() => setEditing(null)} /> : null}
      </Dialog>
    </>
  );
}

/** "all", "all but outbox:approve" (a key with guardrails), or the list. */
function scopeText(scopes: string[]): string {
  if (scopes.length === SCOPES.length) return "all";
  if (scopes.length === SCOPES.length - 1 && !scopes.includes(APPROVE_SCOPE)) return `all but ${APPROVE_SCOPE}`;
  return scopes.join(", ");
}

/** Changes an existing key's guardrails; a refusal (a key that holds outbox:approve) shows the server's sentence. */
function EditGuardrails({ apiKey, onDone, onCancel }: { apiKey: { id: string; scopes: string[]; guardrails: Guardrails }; onDone: () => void; onCancel: () => void }) {
  const trpc = useTRPC();
  const [draft, setDraft] = useState(() => draftOf(apiKey.guardrails));
  const save = useMutation(trpc.keys.setGuardrails.mutationOptions({ onSuccess: onDone }));
  return (
    <form
      className="stack"
      aria-label="Change guardrails"
      onSubmit={(e) => {
        e.preventDefault();
        save.mutate({ id: apiKey.id, guardrails: guardrailsOf(draft) });
      }}
    >
      {apiKey.scopes.includes(APPROVE_SCOPE) ? (
        <p className={styles.scopeNote}>
          This key holds <span className="mono">{APPROVE_SCOPE}</span>, which a key with guardrails cannot: replace it with a key without that scope to add any.
        </p>
      ) : null}
      <GuardrailsFields value={draft} onChange={setDraft} framed={false} />
      <ErrorText error={save.error} />
      <DialogFormActions submit="Save guardrails" busy={save.isPending} onCancel={onCancel} />
    </form>
  );
}

"use client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { type FormEvent, useId, useState } from "react";
import { ConfirmDialog } from "@/components/dialog";
import { LineHealth } from "@/components/line-connect";
import { useLines } from "@/components/lines";
import { CopyButton, ErrorText, Loading, Time } from "@/components/widgets";
import { useTRPC } from "@/lib/trpc";
import styles from "@/components/sending.module.css";

// Sender pools: named sets of the account's lines that send as one. A send whose `from` is a
// pool's ID goes from one of its lines (the one already talking with the contact, otherwise
// the connected line with the most new-contact budget left). Create, add or remove a line,
// delete.

type LineRow = ReturnType<typeof useLines>["lines"][number];
interface Pool {
  id: string;
  name: string;
  line_ids: string[];
  created_at: number;
}

function WhatIsAPool() {
  return (
    <p className="small muted" style={{ margin: 0 }}>
      A pool is a named group of your lines that sends as one. Use its ID (<code>pool_…</code>) as <code>from</code> in{" "}
      <code>POST /v1/messages</code>: each conversation goes from one of its lines, the one already talking with the contact, otherwise the connected line with the
      most new-contact budget left, so a conversation never changes number.
    </p>
  );
}

function CreatePool({ lines, onCreated }: { lines: LineRow[]; onCreated: () => void }) {
  const trpc = useTRPC();
  const nameId = useId();
  const [name, setName] = useState("");
  const [picked, setPicked] = useState<Set<string>>(new Set());
  const create = useMutation(
    trpc.pools.create.mutationOptions({
      onSuccess: () => {
        setName("");
        setPicked(new Set());
        onCreated();
      },
    }),
  );
  const nameError = create.error?.data?.param === "name" ? create.error.message : null;
  function submit(e: FormEvent) {
    e.preventDefault();
    create.mutate({ name, line_ids: [...picked] });
  }
  const toggle = (id: string, on: boolean) => {
    const next = new Set(picked);
    if (on) next.add(id);
    else next.delete(id);
    setPicked(next);
  };
  return (
    <form className="panel stack" onSubmit={submit} aria-label="Create a pool">
      <h2>Create a pool</h2>
      <div className={styles.field} style={{ maxWidth: 360 }}>
        <label htmlFor={nameId}>Name</label>
        <input
          id={nameId}
          value={name}
          onChange={(e) => setName(e.target.value)}
          maxLength={100}
          placeholder="e.g. Outreach"
          required
          aria-invalid={nameError ? true : undefined}
          aria-describedby={nameError ? `${nameId}-error` : undefined}
        />
        {nameError ? (
          <div id={`${nameId}-error`} className="small error" role="alert">
            {nameError}
          </div>
        ) : null}
      </div>
      <fieldset className={styles.pickLines}>
        <legend>Lines</legend>
        {lines.length ? (
          lines.map((l) => (
            <label key={l.id} className="check">
              <input type="checkbox" checked={picked.has(l.id)} onChange={(e) => toggle(l.id, e.target.checked)} />
              <span className="mono">{l.handle}</span>
              {l.label ? <span className="muted">{l.label}</span> : null}
              <LineHealth status={l.status} reason={l.status_reason} />
            </label>
          ))
        ) : (
          <span className="small muted">
            No lines of your own yet: <Link href="/dashboard/lines">add one</Link> first. (The shared sandbox line cannot join a pool.)
          </span>
        )}
      </fieldset>
      <ErrorText error={nameError ? null : create.error} />
      <div>
        <button type="submit" className="primary" disabled={create.isPending || !name.trim()}>
          {create.isPending ? "Creating…" : "Create pool"}
        </button>
      </div>
    </form>
  );
}

function PoolCard({ pool, lines, onChange }: { pool: Pool; lines: LineRow[]; onChange: () => void }) {
  const trpc = useTRPC();
  const byId = new Map(lines.map((l) => [l.id, l]));
  const addable = lines.filter((l) => !pool.line_ids.includes(l.id));
  const [adding, setAdding] = useState("");
  const [deleting, setDeleting] = useState(false);
  const add = useMutation(trpc.pools.addLine.mutationOptions({ onSuccess: () => (setAdding(""), onChange()) }));
  const remove = useMutation(trpc.pools.removeLine.mutationOptions({ onSuccess: onChange }));
  const del = useMutation(trpc.pools.delete.mutationOptions({ onSuccess: () => (setDeleting(false), onChange()) }));
  const headingId = useId();
  const selectId = useId();
  return (
    <section className={`panel stack ${styles.poolCard}`} aria-labelledby={headingId} data-testid="pool">
      <div className={`row spread ${styles.poolHead}`}>
        <div className={styles.poolName}>
          <h2 id={headingId}>{pool.name}</h2>
          <div className="row small">
            <code className={styles.poolId}>{pool.id}</code>
            <CopyButton text={pool.id} label="Copy ID" />
          </div>
        </div>
        <button type="button" className="danger" onClick={() => (del.reset(), setDeleting(true))}>
          Delete pool
        </button>
      </div>
      {pool.line_ids.length ? (
        <ul className={styles.poolLines} aria-label={`Lines of ${pool.name}`}>
          {pool.line_ids.map((id) => {
            const l = byId.get(id);
            return (
              <li key={id}>
                <span className={styles.poolLine}>
                  {l ? (
                    <Link className="mono" href={`/dashboard/lines/${id}`}>
                      {l.handle}
                    </Link>
                  ) : (
                    <span className="mono">{id}</span>
                  )}
                  {l?.label ? <span className="small muted">{l.label}</span> : null}
                </span>
                <span className="row">
                  {l ? <LineHealth status={l.status} reason={l.status_reason} /> : null}
                  {l && !l.is_active ? <span className="badge bad">disabled</span> : null}
                  <button
                    type="button"
                    className={styles.smallButton}
                    onClick={() => remove.mutate({ pool_id: pool.id, line_id: id })} disabled={remove.isPending} aria-label={`Remove ${l?.handle ?? id} from ${pool.name}`}>
                    Remove
                  </button>
                </span>
              </li>
            );
          })}
        </ul>
      ) : (
        <p className="small muted" style={{ margin: 0 }}>
          No lines: sends from this pool are refused until it has one.
        </p>
      )}
      {addable.length ? (
        <form
          className="row"
          onSubmit={(e) => {
            e.preventDefault();
            if (adding) add.mutate({ pool_id: pool.id, line_id: adding });
          }}
        >
          <label htmlFor={selectId} className="visually-hidden">
            Line to add to {pool.name}
          </label>
          <select id={selectId} value={adding} onChange={(e) => setAdding(e.target.value)}>
            <option value="">Add a line…</option>
            {addable.map((l) => (
              <option key={l.id} value={l.id}>
                {l.label ? `${l.label} (${l.handle})` : l.handle}
              </option>
            ))}
          </select>
          <button type="submit" disabled={!adding || add.isPending}>
            Add
          </button>
        </form>
      ) : null}
      <ErrorText error={add.error ?? remove.error} />
      <p className="small muted" style={{ margin: 0 }}>
        Created <Time ms={pool.created_at} />
      </p>
      <ConfirmDialog
        open={deleting}
        title={`Delete ${pool.name}?`}
        confirm="Delete pool"
        danger
        busy={del.isPending}
        onConfirm={() => del.mutate({ id: pool.id })}
        onClose={() => setDeleting(false)}
      >
        <p>
          Sends that name <code>{pool.id}</code> as <code>from</code> will be refused. Its lines stay as they are, and sends already made keep their line.
        </p>
        <ErrorText error={del.error} />
      </ConfirmDialog>
    </section>
  );
}

export default function PoolsPage() {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const pools = useQuery(trpc.pools.list.queryOptions());
  const all = useLines();
  // The shared sandbox line belongs to no account: it cannot join a pool.
  const lines = all.lines.filter((l) => !l.is_sandbox);
  const refresh = () => void qc.invalidateQueries({ queryKey: trpc.pools.list.queryKey() });
  const list = pools.data?.data ?? [];
  return (
    <>
      <h1>Pools</h1>
      <ErrorText error={pools.error ?? all.error} />
      {pools.isPending || all.isPending ? (
        <Loading />
      ) : list.length ? (
        <>
          <div className="panel">
            <WhatIsAPool />
          </div>
          {list.map((p) => (
            <PoolCard key={p.id} pool={p} lines={lines} onChange={refresh} />
          ))}
        </>
      ) : (
        <div className={`panel stack ${styles.empty}`} data-testid="pools-empty">
          <h2>No pools yet</h2>
          <WhatIsAPool />
        </div>
      )}
      <CreatePool lines={lines} onCreated={refresh} />
    </>
  );
}

"use client";
import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useParams, useRouter } from "next/navigation";
import { Fragment, useState } from "react";
import { ListTable } from "@/components/table";
import { Empty, ErrorText, Loading, SecretOnce, StatusBadge, Time } from "@/components/widgets";
import { useTRPC } from "@/lib/trpc";

const STATUSES = ["", "pending", "delivering", "succeeded", "failed"] as const;

function Attempts({ id }: { id: string }) {
  const trpc = useTRPC();
  const detail = useQuery(trpc.webhooks.delivery.queryOptions({ id }));
  if (detail.isPending) return <Loading what="Loading attempts" />;
  if (detail.error) return <ErrorText error={detail.error} />;
  const d = detail.data;
  return (
    <div className="stack small">
      <table>
        <thead>
          <tr>
            <th>Attempt</th>
            <th>Started</th>
            <th>Result</th>
            <th>Duration</th>
            <th>Response</th>
          </tr>
        </thead>
        <tbody>
          {d.attempt_log.map((a, i) => (
            <tr key={a.started_at + i}>
              <td>{i + 1}</td>
              <td>
                <Time ms={a.started_at} />
              </td>
              <td>{a.status_code ?? <span className="error">{a.error}</span>}</td>
              <td>{a.duration_ms} ms</td>
              <td className="mono">{a.response_excerpt?.slice(0, 200)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {!d.attempt_log.length ? <Empty>No attempt yet.</Empty> : null}
      <details>
        <summary>Event data</summary>
        <pre className="mono" style={{ whiteSpace: "pre-wrap" }}>
          {JSON.stringify(d.data, null, 2)}
        </pre>
      </details>
    </div>
  );
}

export default function WebhookPage() {
  const { id } = useParams<{ id: string }>();
  const trpc = useTRPC();
  const qc = useQueryClient();
  const router = useRouter();
  const hook = useQuery(trpc.webhooks.get.queryOptions({ id }));
  const [status, setStatus] = useState<(typeof STATUSES)[number]>("");
  const deliveries = useInfiniteQuery(
    trpc.webhooks.deliveries.infiniteQueryOptions(
      { webhook_id: id, limit: 25, status: status || undefined },
      { getNextPageParam: (p) => p.next_cursor ?? undefined, refetchInterval: 3_000 },
    ),
  );
  const rows = deliveries.data?.pages.flatMap((p) => p.data) ?? [];
  const [open, setOpen] = useState<string | null>(null);
  const [secret, setSecret] = useState<string | null>(null);
  const [since, setSince] = useState("");
  const refresh = () => qc.invalidateQueries({ queryKey: trpc.webhooks.pathKey() });
  const resend = useMutation(trpc.webhooks.resend.mutationOptions({ onSuccess: refresh }));
  const enable = useMutation(trpc.webhooks.enable.mutationOptions({ onSuccess: refresh }));
  const disable = useMutation(trpc.webhooks.disable.mutationOptions({ onSuccess: refresh }));
  const rotate = useMutation(trpc.webhooks.rotateSecret.mutationOptions({ onSuccess: (w) => setSecret(w.secret ?? null) }));
  const remove = useMutation(trpc.webhooks.delete.mutationOptions({ onSuccess: () => router.push("/dashboard/webhooks") }));
  const w = hook.data;

  return (
    <>
      <p className="small">
        <Link href="/dashboard/webhooks">← Webhooks</Link>
      </p>
      <h1 className="mono" style={{ wordBreak: "break-all" }}>
        {w?.url ?? "Webhook"}
      </h1>
      <ErrorText error={hook.error ?? resend.error ?? enable.error ?? disable.error ?? rotate.error ?? remove.error} />
      {secret ? <SecretOnce title="New signing secret (the old one keeps working for 24 hours)" secret={secret} onDone={() => setSecret(null)} /> : null}
      {w ? (
        <div className="panel stack">
          <div className="row">
            <StatusBadge status={w.is_active ? "active" : "disabled"} />
            {w.disabled_reason ? <span className="small muted">{w.disabled_reason}</span> : null}
            <span className="small muted">{w.events.join(", ")}</span>
          </div>
          <div className="row">
            {w.is_active ? (
              <button type="button" onClick={() => disable.mutate({ id })}>
                Disable
              </button>
            ) : (
              <button type="button" onClick={() => enable.mutate({ id })}>
                Enable
              </button>
            )}
            <button type="button" onClick={() => confirm("Rotate the signing secret?") && rotate.mutate({ id })}>
              Rotate secret
            </button>
            <button type="button" className="danger" onClick={() => confirm("Delete this webhook and its delivery log?") && remove.mutate({ id })}>
              Delete
            </button>
          </div>
          <form
            className="row"
            onSubmit={(e) => {
              e.preventDefault();
              resend.mutate({ webhook_id: id, since: since ? new Date(since).getTime() : 0 });
            }}
          >
            <label>
              Resend every failing delivery since
              <input type="datetime-local" value={since} onChange={(e) => setSince(e.target.value)} />
            </label>
            <button type="submit" style={{ alignSelf: "end" }} disabled={resend.isPending}>
              Resend failed
            </button>
            {resend.data ? <span className="small ok">{resend.data.resent} queued again</span> : null}
          </form>
        </div>
      ) : hook.isPending ? (
        <Loading />
      ) : null}
      <div className="panel">
        <div className="row spread">
          <h2>Deliveries</h2>
          <label className="check">
            Status
            <select value={status} onChange={(e) => setStatus(e.target.value as (typeof STATUSES)[number])}>
              {STATUSES.map((s) => (
                <option key={s} value={s}>
                  {s || "all"}
                </option>
              ))}
            </select>
          </label>
        </div>
        <ErrorText error={deliveries.error} />
        <ListTable
          loading={deliveries.isPending}
          rows={rows}
          empty={`No deliveries${status ? ` with status ${status}` : ""} yet.`}
          headers={["Event", "Delivery", "Status", "Attempts", "Created", ""]}
          row={(d) => (
            <Fragment key={d.id}>
              <tr data-testid="delivery">
                <td className="mono">{d.event}</td>
                <td className="mono small">{d.id}</td>
                <td>
                  <StatusBadge status={d.status} />
                  {d.last_error ? <div className="small error">{d.last_error}</div> : null}
                  {d.next_attempt_at ? (
                    <div className="small muted">
                      next <Time ms={d.next_attempt_at} />
                    </div>
                  ) : null}
                </td>
                <td>{d.attempts}</td>
                <td>
                  <Time ms={d.created_at} />
                </td>
                <td>
                  <div className="row">
                    <button type="button" aria-expanded={open === d.id} onClick={() => setOpen(open === d.id ? null : d.id)}>
                      {open === d.id ? "Hide" : "Attempts"}
                    </button>
                    {d.status === "succeeded" || d.status === "failed" || (d.status === "pending" && d.attempts > 0) ? (
                      <button type="button" onClick={() => resend.mutate({ id: d.id })}>
                        Resend
                      </button>
                    ) : null}
                  </div>
                </td>
              </tr>
              {open === d.id ? (
                <tr>
                  <td colSpan={6}>
                    <Attempts id={d.id} />
                  </td>
                </tr>
              ) : null}
            </Fragment>
          )}
          more={{ has: deliveries.hasNextPage, loading: deliveries.isFetchingNextPage, load: () => void deliveries.fetchNextPage() }}
        />
      </div>
    </>
  );
}

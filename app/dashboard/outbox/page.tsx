"use client";
import { useInfiniteQuery } from "@tanstack/react-query";
import { useRouter, useSearchParams } from "next/navigation";
import { Suspense } from "react";
import { ListTable } from "@/components/table";
import { ErrorText, Loading, StatusBadge, Time } from "@/components/ui";
import { useTRPC } from "@/lib/trpc";
import { OUTBOX_STATUSES, type OutboxStatus } from "@/server/services/messaging/outbox-statuses";

function Outbox() {
  const trpc = useTRPC();
  const router = useRouter();
  const raw = useSearchParams().get("status") ?? "";
  const status = (OUTBOX_STATUSES as readonly string[]).includes(raw) ? (raw as OutboxStatus) : undefined;
  const items = useInfiniteQuery(
    trpc.outbox.list.infiniteQueryOptions({ limit: 50, status }, { getNextPageParam: (p) => p.next_cursor ?? undefined, refetchInterval: 3_000 }),
  );
  const rows = items.data?.pages.flatMap((p) => p.data) ?? [];
  return (
    <>
      <h1>Outbox</h1>
      <div className="panel row">
        <label>
          Status
          <select value={status ?? ""} onChange={(e) => router.replace(`/dashboard/outbox${e.target.value ? `?status=${e.target.value}` : ""}`)}>
            <option value="">all</option>
            {OUTBOX_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
      </div>
      <div className="panel">
        <ErrorText error={items.error} />
        <ListTable
          loading={items.isPending}
          rows={rows}
          empty={`Nothing in the outbox${status ? ` with status ${status}` : ""}.`}
          headers={["Item", "Kind", "Status", "Attempts", "Created", "Completed"]}
          row={(o) => (
            <tr key={o.id} data-testid="outbox-item">
              <td className="mono small">{o.id}</td>
              <td>{o.kind}</td>
              <td>
                <StatusBadge status={o.status} />
                {o.error ? <div className="small error">{o.error}</div> : null}
              </td>
              <td>
                {o.attempts}/{o.max_attempts}
              </td>
              <td>
                <Time ms={o.created_at} />
              </td>
              <td>
                <Time ms={o.completed_at} />
              </td>
            </tr>
          )}
          more={{ has: items.hasNextPage, loading: items.isFetchingNextPage, load: () => void items.fetchNextPage() }}
        />
      </div>
    </>
  );
}

export default function OutboxPage() {
  return (
    <Suspense fallback={<Loading />}>
      <Outbox />
    </Suspense>
  );
}

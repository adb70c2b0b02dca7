"use client";
import { useInfiniteQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useRouter, useSearchParams } from "next/navigation";
import { Suspense } from "react";
import { LineFilter, lineName, useLines } from "@/components/lines";
import { ListTable } from "@/components/table";
import { ErrorText, Loading, StatusBadge, Time } from "@/components/ui";
import { useTRPC } from "@/lib/trpc";
import { OUTBOX_STATUSES, type OutboxStatus } from "@/server/services/messaging/outbox-statuses";

// Every send of the account, newest first: to whom, from which line, what, its state with the
// reason in words when it failed, and a link to its chat; filtered by status and line.

const KIND: Record<string, string> = { message: "Message", reaction: "Reaction", typing: "Typing", receipt: "Read receipt" };

interface Payload {
  chat_id?: string;
  to?: string;
  text?: string | null;
  attachments?: string[];
  is_audio_message?: boolean;
  type?: string;
  is_typing?: boolean;
}

function what(kind: string, p: Payload): string {
  if (kind === "message") return p.text ? p.text : p.is_audio_message ? "Voice memo" : p.attachments?.length ? "Attachment" : "";
  if (kind === "reaction") return p.type ?? "";
  if (kind === "typing") return p.is_typing ? "started typing" : "stopped typing";
  return "";
}

function Outbox() {
  const trpc = useTRPC();
  const router = useRouter();
  const params = useSearchParams();
  const raw = params.get("status") ?? "";
  const status = (OUTBOX_STATUSES as readonly string[]).includes(raw) ? (raw as OutboxStatus) : undefined;
  const line = params.get("line") ?? "";
  const lines = useLines();
  const handleOf = new Map(lines.lines.map((l) => [l.id, lineName(l)]));
  const items = useInfiniteQuery(
    trpc.outbox.list.infiniteQueryOptions(
      { limit: 50, status, from: line || undefined },
      { getNextPageParam: (p) => p.next_cursor ?? undefined, refetchInterval: 5_000 },
    ),
  );
  const rows = items.data?.pages.flatMap((p) => p.data) ?? [];
  const go = (next: { status?: string; line?: string }) => {
    const q = new URLSearchParams();
    const s = next.status ?? status ?? "";
    const l = next.line ?? line;
    if (s) q.set("status", s);
    if (l) q.set("line", l);
    router.replace(`/dashboard/outbox${q.size ? `?${q}` : ""}`);
  };
  return (
    <>
      <h1>Outbox</h1>
      <div className="panel row">
        <label>
          Status
          <select value={status ?? ""} onChange={(e) => go({ status: e.target.value })}>
            <option value="">all</option>
            {OUTBOX_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <LineFilter lines={lines.lines} value={line} onChange={(h) => go({ line: h })} />
      </div>
      <div className="panel">
        <ErrorText error={items.error} />
        <ListTable
          label="Outbox items"
          loading={items.isPending}
          rows={rows}
          empty={`Nothing in the outbox${status ? ` with status ${status}` : ""}${line ? ` on ${line}` : ""}.`}
          headers={["To", "Line", "What", "Status", "Attempts", "Created", ""]}
          row={(o) => {
            const p = (o.payload ?? {}) as Payload;
            return (
              <tr key={o.id} data-testid="outbox-item">
                <td className="mono small">{p.to ?? "—"}</td>
                <td className="small">{handleOf.get(o.line_id) ?? o.line_id}</td>
                <td>
                  <span className="small muted">{KIND[o.kind] ?? o.kind}</span>
                  <div className="clamp">{what(o.kind, p)}</div>
                </td>
                <td>
                  <StatusBadge status={o.status} />
                  {o.error ? <div className="small error">{o.error}</div> : null}
                </td>
                <td>
                  {o.attempts}/{o.max_attempts}
                </td>
                <td>
                  <Time ms={o.created_at} />
                  <div className="small muted mono">{o.id}</div>
                </td>
                <td>{p.chat_id ? <Link href={`/dashboard/chats/${p.chat_id}`}>Open chat</Link> : null}</td>
              </tr>
            );
          }}
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

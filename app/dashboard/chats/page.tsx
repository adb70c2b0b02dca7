"use client";
import { useInfiniteQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useRouter, useSearchParams } from "next/navigation";
import { Suspense, useState } from "react";
import { Empty, ErrorText, Loading, Time } from "@/components/ui";
import { LineSelect, useLines } from "@/components/lines";
import { useTRPC } from "@/lib/trpc";

function Chats() {
  const trpc = useTRPC();
  const router = useRouter();
  const params = useSearchParams();
  const lines = useLines();
  const line = params.get("line") ?? lines.lines[0]?.handle ?? "";
  const [search, setSearch] = useState(params.get("q") ?? "");
  const chats = useInfiniteQuery(
    trpc.chats.list.infiniteQueryOptions(
      { from: line, limit: 25, search: search || undefined },
      { enabled: !!line, getNextPageParam: (page) => page.next_cursor ?? undefined, refetchInterval: 5_000 },
    ),
  );
  const rows = chats.data?.pages.flatMap((p) => p.data) ?? [];

  return (
    <>
      <h1>Chats</h1>
      <div className="panel row">
        <LineSelect lines={lines.lines} value={line} onChange={(h) => router.replace(`/dashboard/chats?line=${encodeURIComponent(h)}`)} />
        <label style={{ flex: 1 }}>
          Search
          <input type="search" value={search} onChange={(e) => setSearch(e.target.value)} placeholder="Phone number, email or group name" />
        </label>
      </div>
      <div className="panel">
        <ErrorText error={lines.error ?? chats.error} />
        {lines.isPending || (chats.isPending && !!line) ? (
          <Loading />
        ) : !line ? (
          <Empty>
            No lines yet. <Link href="/dashboard/lines">Create one</Link>.
          </Empty>
        ) : !rows.length ? (
          <Empty>{search ? "No chat matches." : "No chats on this line yet. Text it from the simulator."}</Empty>
        ) : (
          <div className="chat-list">
            {rows.map((c) => (
              <Link key={c.id} href={`/dashboard/chats/${c.id}`}>
                <div className="row spread">
                  <strong>{c.name ?? c.identifier}</strong>
                  <span className="small muted">
                    <Time ms={c.last_message_at} />
                  </span>
                </div>
                <div className="small muted">
                  {c.is_group ? `group · ${c.participants.length} people` : c.service}
                  {c.has_received_inbound ? "" : " · has not messaged yet"}
                </div>
              </Link>
            ))}
          </div>
        )}
        {chats.hasNextPage ? (
          <button type="button" onClick={() => void chats.fetchNextPage()} disabled={chats.isFetchingNextPage}>
            Load more
          </button>
        ) : null}
      </div>
    </>
  );
}

export default function ChatsPage() {
  return (
    <Suspense fallback={<Loading />}>
      <Chats />
    </Suspense>
  );
}

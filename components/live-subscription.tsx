"use client";
import { useEffect, useRef, useState } from "react";

// Live updates for the dashboard: a GraphQL subscription over server-sent events (POST with
// Accept: text/event-stream, the signed-in session's cookie), reconnected with a growing pause
// when it ends. Each event calls `onEvent`; pages refetch what it touches.

type LiveState = "connecting" | "live" | "offline";

export function useLiveSubscription(query: string, variables: Record<string, unknown>, onEvent: (data: Record<string, unknown>) => void): LiveState {
  const [state, setState] = useState<LiveState>("connecting");
  const handler = useRef(onEvent);
  handler.current = onEvent;
  const key = JSON.stringify(variables);

  useEffect(() => {
    const abort = new AbortController();
    let pause = 1_000;
    async function run() {
      while (!abort.signal.aborted) {
        try {
          const res = await fetch("/api/graphql", {
            method: "POST",
            headers: { "content-type": "application/json", accept: "text/event-stream" },
            body: JSON.stringify({ query, variables: JSON.parse(key) }),
            signal: abort.signal,
          });
          if (!res.ok || !res.body) throw new Error(`subscription answered ${res.status}`);
          setState("live");
          pause = 1_000;
          const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
          let buffer = "";
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            buffer += value;
            let end: number;
            while ((end = buffer.indexOf("\n\n")) >= 0) {
              const frame = buffer.slice(0, end);
              buffer = buffer.slice(end + 2);
              const data = frame
                .split("\n")
                .filter((l) => l.startsWith("data:"))
                .map((l) => l.slice(5).trim())
                .join("\n");
              if (!data) continue;
              const parsed = JSON.parse(data) as { data?: Record<string, unknown> | null };
              if (parsed.data) handler.current(parsed.data);
            }
          }
        } catch {
          if (abort.signal.aborted) return;
        }
        setState("offline");
        await new Promise((r) => setTimeout(r, pause));
        pause = Math.min(pause * 2, 30_000);
      }
    }
    void run();
    return () => abort.abort();
  }, [query, key]);

  return state;
}

/** The subscription's state beside a page's title. */
export function LiveStatus({ state }: { state: LiveState }) {
  return (
    <span className={`small live-dot ${state}`} role="status" aria-label={`Live updates: ${state}`}>
      {state === "live" ? "Live" : state === "connecting" ? "Connecting…" : "Reconnecting…"}
    </span>
  );
}

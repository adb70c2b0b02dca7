"use client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { ErrorText, Time } from "./widgets";
import { When } from "./when";
import { useTRPC } from "@/lib/trpc";
import agents from "./approvals.module.css";

/** Pause and Resume of automated sending in the chat, and the banner while it is paused. */
export function Takeover({ chatId, placement }: { chatId: string; placement: "button" | "banner" }) {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const takeover = useQuery({ ...trpc.chats.takeover.queryOptions({ id: chatId }), refetchInterval: 60_000 });
  const refresh = () => {
    void qc.invalidateQueries({ queryKey: trpc.chats.takeover.queryKey({ id: chatId }) });
    void qc.invalidateQueries({ queryKey: trpc.chats.get.queryKey({ id: chatId }) });
  };
  const pause = useMutation(trpc.chats.pause.mutationOptions({ onSuccess: refresh }));
  const resume = useMutation(trpc.chats.resume.mutationOptions({ onSuccess: refresh }));
  const t = takeover.data;
  if (!t) return null;
  if (placement === "button") {
    return t.paused_at ? null : (
      <div className="stack" style={{ gap: "0.25rem", alignItems: "flex-end" }}>
        <button type="button" onClick={() => pause.mutate({ id: chatId })} disabled={pause.isPending} title="Keys with guardrails (AI agents) may not send here until you resume; your own replies still go.">
          {pause.isPending ? "Pausing…" : "Pause automated sending"}
        </button>
        <ErrorText error={pause.error} />
      </div>
    );
  }
  if (!t.paused_at) return null;
  const by = t.paused_by;
  return (
    <div className={agents.banner} role="status" data-testid="paused-banner">
      <div className={agents.bannerText}>
        <strong>Automated sending is paused</strong>
        <span className="small">
          Paused by {by ? (by.kind === "api_key" ? <>the key “{by.name}”</> : by.name) : "someone"} <When ms={t.paused_at} show="relative" /> (
          <Time ms={t.paused_at} />
          ). Keys with guardrails may not send to this chat; your own replies still go.
        </span>
        <ErrorText error={resume.error} />
      </div>
      <button type="button" className="primary" onClick={() => resume.mutate({ id: chatId })} disabled={resume.isPending}>
        {resume.isPending ? "Resuming…" : "Resume"}
      </button>
    </div>
  );
}

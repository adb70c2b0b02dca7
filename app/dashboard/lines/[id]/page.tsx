"use client";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useParams } from "next/navigation";
import { useState } from "react";
import { CapacityPanel } from "@/components/capacity";
import { LineHealth, providerLabel } from "@/components/line-connect";
import { policySummary, type SavedPolicy, SendPolicyForm } from "@/components/send-policy";
import { ErrorText, Loading } from "@/components/widgets";
import { useTRPC } from "@/lib/trpc";
import styles from "@/components/sending.module.css";

// One line: its send policy (contact-first, new-contact budgets, quiet hours, pace), edited in
// place, and its capacity now (budgets used, quiet hours, what waits, the next slot).

export default function LinePage() {
  const { id } = useParams<{ id: string }>();
  const trpc = useTRPC();
  const qc = useQueryClient();
  const data = useQuery(trpc.lines.policy.queryOptions({ line_id: id }));
  const line = data.data?.line;
  const policy = data.data?.policy;
  const [savedAt, setSavedAt] = useState<number | null>(null);
  const saved = (result: SavedPolicy) => {
    qc.setQueryData(trpc.lines.policy.queryKey({ line_id: id }), result);
    setSavedAt(Date.now());
    void qc.invalidateQueries({ queryKey: trpc.lines.capacity.pathKey() });
    void qc.invalidateQueries({ queryKey: trpc.lines.list.queryKey() });
  };
  return (
    <>
      <p className="small">
        <Link href="/dashboard/lines">← Lines</Link>
      </p>
      <h1 className={styles.lineTitle}>
        <span className="mono">{line?.handle ?? "Line"}</span>
        {line?.label ? <span className={styles.lineLabel}>{line.label}</span> : null}
      </h1>
      <ErrorText error={data.error} />
      {data.isPending ? <Loading /> : null}
      {line && policy ? (
        <>
          <p className="row small muted">
            <LineHealth status={line.status} reason={line.status_reason} />
            <span>{line.service === "imessage" ? "iMessage" : line.service === "sms" ? "SMS" : "Auto"}</span>
            <span>·</span>
            <span>{providerLabel(line.provider, true)}</span>
            <span>·</span>
            <Link href={`/dashboard/chats?line=${encodeURIComponent(line.handle)}`}>Chats</Link>
            <Link href={`/dashboard/outbox?line=${encodeURIComponent(line.handle)}`}>Outbox</Link>
          </p>
          <div className={styles.lineGrid}>
            <section className="panel stack" aria-labelledby="policy-heading">
              <div>
                <h2 id="policy-heading" className={styles.sectionTitle}>
                  Send policy
                </h2>
                <p className="small muted" style={{ margin: 0 }} data-testid="policy-summary">
                  {policySummary(policy)}
                </p>
              </div>
              {/* Keyed by the saved policy: a save (or a change elsewhere) shows what the server kept. */}
              <SendPolicyForm
                key={JSON.stringify(policy)}
                lineId={line.id}
                policy={policy}
                editable={data.data?.editable ?? false}
                onSaved={saved}
                status={savedAt ? "Saved. Sends already waiting are judged again by the new policy." : ""}
              />
            </section>
            <CapacityPanel lineId={line.id} handle={line.handle} contactFirst={policy.contact_first} quiet={policy.quiet_hours} />
          </div>
        </>
      ) : null}
    </>
  );
}

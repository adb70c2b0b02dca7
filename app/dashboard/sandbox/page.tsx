"use client";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import QRCode from "qrcode";
import { sandboxSmsLink } from "@/packages/client/src/sandbox";
import { useEffect, useState } from "react";
import { CopyButton, ErrorText, Loading, StatusBadge, Time } from "@/components/widgets";
import { useTRPC } from "@/lib/trpc";

function QrImage({ text }: { text: string }) {
  const [src, setSrc] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    void QRCode.toDataURL(text, { margin: 1, width: 220 }).then((url) => live && setSrc(url));
    return () => {
      live = false;
    };
  }, [text]);
  return src ? <img src={src} width={220} height={220} alt={`QR code: text ${text}`} /> : <Loading what="Drawing QR code" />;
}

export default function SandboxPage() {
  const trpc = useTRPC();
  const qc = useQueryClient();
  const sandbox = useQuery(trpc.sandbox.get.queryOptions(undefined, { refetchInterval: (q) => (q.state.data?.status === "pending" ? 2_000 : false) }));
  const activate = useMutation(trpc.sandbox.activate.mutationOptions({ onSuccess: () => qc.invalidateQueries({ queryKey: trpc.sandbox.get.queryKey() }) }));
  const s = sandbox.data;
  const smsLink = s?.activation_code ? sandboxSmsLink(s.sandbox_line_handle, s.activation_code) : null;

  return (
    <>
      <h1>Sandbox</h1>
      <p className="muted">
        Try Relay with your own phone before you have a line: pair it with the shared sandbox line, then send and receive through the API as with any line (50
        messages a day).
      </p>
      <ErrorText error={sandbox.error ?? activate.error} />
      {sandbox.isPending ? (
        <Loading />
      ) : s ? (
        <>
          <div className="panel stack">
            <div className="row">
              Status: <StatusBadge status={s.status} />
            </div>
            {s.status === "missing" ? (
              <div>
                <button className="primary" type="button" onClick={() => activate.mutate()} disabled={activate.isPending}>
                  Get an activation code
                </button>
              </div>
            ) : null}
            {s.status === "pending" && s.activation_code ? (
              <div className="row" style={{ alignItems: "flex-start", gap: "1.5rem" }}>
                <div className="stack">
                  <div>
                    Text <strong className="mono">{s.activation_code}</strong> to <strong className="mono">{s.sandbox_line_handle}</strong> from your phone.
                  </div>
                  <div className="row">
                    <CopyButton text={s.activation_code} label="Copy code" />
                    {smsLink ? (
                      <a className="button" href={smsLink}>
                        Open in Messages
                      </a>
                    ) : null}
                  </div>
                  <p className="small muted">This page updates by itself once your text arrives.</p>
                </div>
                {smsLink ? <QrImage text={smsLink} /> : null}
              </div>
            ) : null}
            {s.status === "active" ? (
              <div className="stack">
                <div>
                  Paired phone: <strong className="mono">{s.contact_identifier}</strong> (since <Time ms={s.activated_at} />)
                </div>
                <div>
                  Sandbox line: <span className="mono">{s.sandbox_line_handle}</span>
                </div>
              </div>
            ) : null}
          </div>
          <div className="panel stack">
            <h2>Today&apos;s usage</h2>
            <progress max={s.usage.limit} value={s.usage.used} aria-label="Messages sent today" style={{ width: "100%" }} />
            <div>
              {s.usage.used} of {s.usage.limit} messages sent today; {s.usage.remaining} left. Resets at <Time ms={s.usage.resets_at} />.
            </div>
          </div>
        </>
      ) : null}
    </>
  );
}

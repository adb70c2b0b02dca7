"use client";
import { useMutation, useQuery } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { Empty, ErrorText, Loading, Time } from "@/components/widgets";
import { LineSelect, useLines } from "@/components/lines";
import { useTRPC } from "@/lib/trpc";
import { REACTION_TYPES } from "@/server/platform/reaction-types";

async function toBase64(file: File): Promise<string> {
  const bytes = new Uint8Array(await file.arrayBuffer());
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

export default function SimulatorPage() {
  const trpc = useTRPC();
  const lines = useLines();
  const [line, setLine] = useState("");
  const [phone, setPhone] = useState("+15551230001");
  const lineHandle = line || lines.lines[0]?.handle || "";
  const status = useQuery(trpc.simulator.status.queryOptions());
  const on = status.data?.enabled === true;
  const inbox = useQuery({
    ...trpc.simulator.inbox.queryOptions({ line: lineHandle, contact: phone, limit: 20 }),
    enabled: on && !!lineHandle && phone.length > 3,
    refetchInterval: 1_500,
  });
  const message = useMutation(trpc.simulator.message.mutationOptions());
  const reaction = useMutation(trpc.simulator.reaction.mutationOptions());
  const typing = useMutation(trpc.simulator.typing.mutationOptions());
  const [sentNote, setSentNote] = useState<string | null>(null);

  async function send(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const formEl = e.currentTarget;
    const form = new FormData(formEl);
    const file = form.get("file");
    const attachment =
      file instanceof File && file.size > 0
        ? { filename: file.name, mime_type: file.type || "application/octet-stream", content_base64: await toBase64(file) }
        : undefined;
    const voice = form.get("voice") === "on";
    const m = await message.mutateAsync({
      line: lineHandle,
      from: phone,
      text: String(form.get("text") || "") || null,
      attachment,
      is_audio_message: voice || undefined,
      transcription: voice ? String(form.get("transcription") || "") || null : undefined,
    });
    setSentNote(`Delivered to the line as ${m.id}.`);
    formEl.reset();
  }

  if (status.isPending) return <Loading />;
  if (!on) {
    return (
      <>
        <h1>Simulator</h1>
        <p className="muted">
          The simulator is off on this server. It is a development and testing tool; an operator can turn it on with
          SIMULATOR_ENABLED=true.
        </p>
        {status.error && <ErrorText error={status.error} />}
      </>
    );
  }

  return (
    <>
      <h1>Simulator</h1>
      <p className="muted">A virtual phone for simulated lines: text a line as a contact and watch its replies arrive.</p>
      <div className="panel row">
        <LineSelect lines={lines.lines} value={lineHandle} onChange={setLine} />
        <label>
          Phone (the contact)
          <input value={phone} onChange={(e) => setPhone(e.target.value)} inputMode="tel" />
        </label>
      </div>
      {!lines.isPending && !lines.lines.length ? <Empty>Create a line first.</Empty> : null}
      <form className="panel stack" onSubmit={(e) => void send(e).catch(() => undefined)} aria-label="Send an inbound message">
        <h2>Text the line</h2>
        <label>
          Message
          <textarea name="text" rows={2} placeholder="Hi!" />
        </label>
        <div className="row">
          <label>
            Attachment or voice memo (optional)
            <input name="file" type="file" />
          </label>
          <label className="check" style={{ alignSelf: "end" }}>
            <input type="checkbox" name="voice" /> Send as a voice memo
          </label>
          <label style={{ flex: 1 }}>
            Transcription (voice memos)
            <input name="transcription" placeholder="What the memo says" />
          </label>
        </div>
        <ErrorText error={message.error} />
        {sentNote && !message.error ? <p className="small ok">{sentNote}</p> : null}
        <div className="row">
          <button className="primary" type="submit" disabled={message.isPending || !lineHandle}>
            Send to line
          </button>
          <button type="button" onClick={() => typing.mutate({ line: lineHandle, from: phone, is_typing: true })} disabled={!lineHandle}>
            Start typing
          </button>
          <button type="button" onClick={() => typing.mutate({ line: lineHandle, from: phone, is_typing: false })} disabled={!lineHandle}>
            Stop typing
          </button>
        </div>
        <ErrorText error={typing.error} />
      </form>
      <div className="panel">
        <h2>Received from the line</h2>
        <ErrorText error={inbox.error ?? reaction.error} />
        {inbox.isPending && inbox.fetchStatus !== "idle" ? (
          <Loading />
        ) : !inbox.data?.data.length ? (
          <Empty>Nothing yet. Replies the line sends to {phone} show up here.</Empty>
        ) : (
          <div className="stack" data-testid="phone-inbox">
            {inbox.data.data.map((m) => (
              <div key={m.id} className="bubble" style={{ maxWidth: "100%" }}>
                {m.text ?? m.attachments.map((a) => a.filename).join(", ")}
                <div className="meta row">
                  <Time ms={m.sent_at} />
                  <select
                    aria-label="React"
                    defaultValue=""
                    onChange={(e) => e.target.value && reaction.mutate({ line: lineHandle, from: phone, message_id: m.id, type: e.target.value as (typeof REACTION_TYPES)[number], added: true })}
                  >
                    <option value="">React…</option>
                    {REACTION_TYPES.map((t) => (
                      <option key={t} value={t}>
                        {t}
                      </option>
                    ))}
                  </select>
                </div>
              </div>
            ))}
          </div>
        )}
      </div>
    </>
  );
}

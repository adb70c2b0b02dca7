"use client";
import { useMutation } from "@tanstack/react-query";
import { type ComponentProps, type FormEvent, useRef, useState } from "react";
import { ErrorText } from "./widgets";
import { parseLocalInput, SendAtField, toLocalInput } from "./when";
import { useTRPC } from "@/lib/trpc";
import styles from "./sending.module.css";

const UPLOAD_HEADER = "x-relay-dashboard";

export interface ReplyTarget {
  id: string;
  text: string | null;
}

async function uploadFile(file: File): Promise<string> {
  const res = await fetch("/api/dashboard/files", {
    method: "POST",
    headers: { "content-type": file.type || "application/octet-stream", "x-filename": file.name, [UPLOAD_HEADER]: "1" },
    body: file,
  });
  const body = (await res.json()) as { id?: string; error?: { message: string; code: string }; request_id?: string };
  if (!res.ok || !body.id) throw Object.assign(new Error(body.error?.message ?? `Upload failed (${res.status})`), { data: { code: body.error?.code, requestId: body.request_id } });
  return body.id;
}

/** The reply box of a conversation: text, an attachment, "reply to" and "Send later". */
export function ChatComposer({
  chatId,
  lineHandle,
  replyTo,
  onReplyTo,
  onSent,
  retryError,
}: {
  chatId: string;
  lineHandle: string | undefined;
  replyTo: ReplyTarget | null;
  onReplyTo: (target: ReplyTarget | null) => void;
  onSent: () => void;
  /** A failed Retry in the conversation, shown with the box's own errors. */
  retryError: ComponentProps<typeof ErrorText>["error"];
}) {
  const trpc = useTRPC();
  const send = useMutation(trpc.chats.send.mutationOptions({ onSuccess: onSent }));
  const [text, setText] = useState("");
  const [file, setFile] = useState<File | null>(null);
  const [uploading, setUploading] = useState(false);
  const [uploadError, setUploadError] = useState<Error | null>(null);
  const fileInput = useRef<HTMLInputElement>(null);
  const [later, setLater] = useState(false);
  const [laterAt, setLaterAt] = useState("");
  const [laterProblem, setLaterProblem] = useState<string | null>(null);

  async function submit(e: FormEvent) {
    e.preventDefault();
    if (!lineHandle || (!text.trim() && !file)) return;
    setUploadError(null);
    let sendAt: number | null = null;
    if (later) {
      const parsed = parseLocalInput(laterAt);
      if ("error" in parsed) return setLaterProblem(parsed.error);
      sendAt = parsed.ms;
    }
    setLaterProblem(null);
    let attachments: string[] = [];
    if (file) {
      setUploading(true);
      try {
        attachments = [await uploadFile(file)];
      } catch (err) {
        setUploadError(err as Error);
        return;
      } finally {
        setUploading(false);
      }
    }
    send.mutate(
      { from: lineHandle, to: chatId, text: text.trim() ? text : null, attachments, reply_to: replyTo?.id ?? null, send_at: sendAt },
      {
        onSuccess: () => {
          setText("");
          setFile(null);
          if (fileInput.current) fileInput.current.value = "";
          onReplyTo(null);
          setLater(false);
          setLaterAt("");
        },
      },
    );
  }

  return (
    <form className="panel stack" onSubmit={(e) => void submit(e)} aria-label="Send a message" noValidate>
      {replyTo ? (
        <div className="row small">
          Replying to “{replyTo.text ?? "attachment"}”
          <button type="button" onClick={() => onReplyTo(null)}>
            Cancel
          </button>
        </div>
      ) : null}
      <label>
        Message
        <textarea rows={2} value={text} onChange={(e) => setText(e.target.value)} maxLength={20_000} placeholder="Write a reply" />
      </label>
      <label>
        Attachment (optional)
        <input ref={fileInput} type="file" onChange={(e) => setFile(e.target.files?.[0] ?? null)} />
      </label>
      <div className={styles.later}>
        <label className="check">
          <input
            type="checkbox"
            checked={later}
            onChange={(e) => {
              setLater(e.target.checked);
              setLaterProblem(null);
              if (e.target.checked && !laterAt) setLaterAt(toLocalInput(Date.now() + 3_600_000));
            }}
          />
          Send later
        </label>
        {later ? (
          <div className={styles.field}>
            <SendAtField
              value={laterAt}
              onChange={setLaterAt}
              problem={laterProblem}
              hint={`Your time (${Intl.DateTimeFormat().resolvedOptions().timeZone}). It waits in the outbox until then.`}
            />
          </div>
        ) : null}
      </div>
      <ErrorText error={uploadError ?? send.error ?? retryError} />
      <div>
        <button className="primary" type="submit" disabled={send.isPending || uploading || (!text.trim() && !file) || !lineHandle}>
          {uploading ? "Uploading…" : send.isPending ? (later ? "Scheduling…" : "Sending…") : later ? "Schedule" : "Send"}
        </button>
      </div>
    </form>
  );
}

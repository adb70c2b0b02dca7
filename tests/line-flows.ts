import { expect, vi } from "vitest";
import { get, post } from "./helpers";

// What the provider tests do through the API as a client would: send on a line, wait for the
// outbox item to settle, read the chat's messages back.

/** An account's key and one of its lines. */
export interface LineFixture {
  key: string;
  line: { handle: string };
}

export interface ApiOutboxItem {
  status: string;
  error: string | null;
  attempts: number;
  segments: number | null;
}

export interface ApiMessage {
  id: string;
  guid: string;
  text: string | null;
  sender: string;
  is_from_me: boolean;
  service: string;
  outbox_id: string | null;
  sent_at: number;
  attachments: { filename: string; mime_type: string; size: number }[];
  delivery_status: string | null;
  delivered_at: number | null;
  delivery_error: string | null;
}

const q = encodeURIComponent;

/** POST /v1/messages from the line (a text, or any body fields); the outbox item's ID. */
export async function send(f: LineFixture, to: string, body: string | Record<string, unknown>): Promise<string> {
  const res = await post("/v1/messages", f.key, { from: f.line.handle, to, ...(typeof body === "string" ? { text: body } : body) });
  expect(res.status).toBe(200);
  return res.body.id as string;
}

export async function outbox(f: LineFixture, id: string): Promise<ApiOutboxItem> {
  return (await get(`/v1/outbox?id=${id}`, f.key)).body as ApiOutboxItem;
}

/** The outbox item once it is sent or failed. */
export async function settled(f: LineFixture, id: string, timeout = 30_000): Promise<ApiOutboxItem> {
  await vi.waitFor(async () => expect(["sent", "failed"]).toContain((await outbox(f, id)).status), { timeout, interval: 100 });
  return outbox(f, id);
}

/** The chat's messages with `to`, newest first. */
export async function messagesOf(f: LineFixture, to: string): Promise<ApiMessage[]> {
  const res = await get(`/v1/messages?from=${q(f.line.handle)}&to=${q(to)}&limit=100`, f.key);
  return (res.body.data ?? []) as ApiMessage[];
}

/** The message an outbox item sent. */
export async function sentMessage(f: LineFixture, to: string, outboxId: string): Promise<ApiMessage> {
  const m = (await messagesOf(f, to)).find((x) => x.outbox_id === outboxId);
  if (!m) throw new Error(`no message for ${outboxId}`);
  return m;
}

import { z } from "zod";
import type { Actor } from "../access/actor";
import { getDb } from "../../db";
import { liveEvents } from "../../events/live";
import { ApiError } from "../../kernel/errors";
import { acquireStreamSlot } from "../webhooks/stream-slots";
import { resolveLine } from "../lines/lines";
import { resolveChat } from "./chats";
import { getMessage, type MessageJson } from "./messages";

// The wait holds no database connection: it listens to the live events and reads the message once it has arrived. It
// takes a stream slot, like GET /v1/listen, and rechecks the key every few seconds.

const MAX_WAIT_SECONDS = 120;
const DEFAULT_WAIT_SECONDS = 50;
const RECHECK_MS = 2_000;

export const WaitForReplyInput = z
  .object({
    from: z.string().trim().min(1, "must not be empty").max(320).describe("The line: its handle or ln_ ID"),
    to: z.string().trim().min(1, "must not be empty").max(320).describe("The chat: the contact's phone number or handle, or a cht_ chat ID"),
    timeout_seconds: z
      .number()
      .int("must be a whole number of seconds")
      .min(1, `must be from 1 to ${MAX_WAIT_SECONDS}`)
      .max(MAX_WAIT_SECONDS, `must be from 1 to ${MAX_WAIT_SECONDS}`)
      .default(DEFAULT_WAIT_SECONDS)
      .describe(`How long to wait, 1 to ${MAX_WAIT_SECONDS} seconds (default ${DEFAULT_WAIT_SECONDS}: under the 60 s many MCP clients allow a call)`),
    since: z
      .number()
      .int("must be Unix milliseconds")
      .min(0)
      .optional()
      .describe("Unix ms. A message that arrived after this time (and before the call) is returned at once; without it only a message that arrives during the wait counts"),
  })
  .strict();

export type WaitResult = { object: "wait_result"; status: "replied"; message: MessageJson } | { object: "wait_result"; status: "timeout"; waited_seconds: number };

export interface WaitOptions {
  signal?: AbortSignal;
  recheckKey: () => Promise<void>;
}

async function storedSince(chatId: string, since: number): Promise<string | null> {
  const db = await getDb();
  const row = await db.message.findFirst({
    where: { chatId, isFromMe: false, syncedAt: { gt: new Date(since) } },
    orderBy: [{ sentAt: "asc" }, { id: "asc" }],
    select: { id: true },
  });
  return row?.id ?? null;
}

export async function waitForReply(actor: Actor, input: z.output<typeof WaitForReplyInput>, options: WaitOptions): Promise<WaitResult> {
  const line = await resolveLine(actor, input.from);
  const chat = await resolveChat(actor, line, input.to);
  const release = acquireStreamSlot(actor);
  const started = Date.now();
  const done = new AbortController();
  const onAbort = () => done.abort();
  options.signal?.addEventListener("abort", onAbort, { once: true });
  // Subscribed before looking at what is stored, so a message in between is not missed.
  const events = liveEvents((e) => e.type === "message.received" && e.chatId === chat.id && e.accountId === actor.accountId, done.signal);
  const timer = setTimeout(() => done.abort(), input.timeout_seconds * 1000);
  let failure: unknown = null;
  const recheck = setInterval(() => {
    options.recheckKey().catch((err: unknown) => {
      failure = err;
      done.abort();
    });
  }, RECHECK_MS);
  try {
    const earlier = input.since !== undefined ? await storedSince(chat.id, input.since) : null;
    if (earlier) return { object: "wait_result", status: "replied", message: await getMessage(actor, earlier) };
    for await (const event of events) {
      if (event.type !== "message.received") continue;
      return { object: "wait_result", status: "replied", message: await getMessage(actor, event.messageId) };
    }
    if (failure) throw failure;
    const waited = Date.now() - started;
    if (waited < input.timeout_seconds * 1000 - 100) {
      // Ended before its time: the client went away (no one hears this), or the instance is stopping.
      throw options.signal?.aborted
        ? new ApiError("request_timeout", "The wait ended: the client went away.")
        : new ApiError("server_shutting_down", "The server is restarting: call wait_for_reply again (with `since`) to keep waiting.");
    }
    return { object: "wait_result", status: "timeout", waited_seconds: Math.round(waited / 1000) };
  } finally {
    clearTimeout(timer);
    clearInterval(recheck);
    options.signal?.removeEventListener("abort", onAbort);
    done.abort();
    await events.return?.();
    release();
  }
}

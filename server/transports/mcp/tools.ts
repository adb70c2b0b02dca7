import { z } from "zod";
import { ApiError, ERROR_CODES, type ErrorCode } from "../../kernel/errors";
import type { Actor } from "../../services/access/actor";
import type { Scope } from "../../services/access/scopes";
import type { Method } from "../../services/operation";
import { canonicalJson, idempotent, IDEMPOTENCY_KEY_PATTERN, requestHash } from "../../services/access/idempotency";
import { listLines } from "../../services/lines/lines";
import { CapacityQuery, getCapacity } from "../../services/lines/capacity";
import { listChats } from "../../services/messaging/chats";
import { listMessages } from "../../services/messaging/messages";
import { cancelOutboxItem, getOutboxItem } from "../../services/messaging/outbox";
import { SendMessageBody, SendReactionBody, SendReceiptBody, SendTypingBody, sendMessage, sendReaction, sendReceipt, sendTyping } from "../../services/messaging/send";
import { WaitForReplyInput, waitForReply } from "../../services/messaging/wait-reply";
import { ListChatsQuery, ListLinesQuery, ListMessagesQuery, OutboxIdQuery } from "../../services/schemas/v1";
import { GUARDED_KINDS } from "../../policy/key-send-limits";
import * as R from "../../wire/responses";
import { MessagePage } from "../../services/messaging/message-operations";
import { OPERATIONS } from "../../services/operations";

// Each tool is a /v1 operation for a model, with its schemas, scope and service call, so every rule
// of the key applies as on /v1 (docs/agents.md). Descriptions and summaries are for the model.

export interface ToolContext {
  actor: Actor;
  requestId: string;
  signal: AbortSignal;
  /** Throws what a new request with the same key would get now (revoked, expired). */
  recheckKey: () => Promise<void>;
}

export interface Tool<S extends z.ZodType = z.ZodType> {
  name: string;
  title: string;
  description: string;
  scope: Scope;
  input: S;
  output: z.ZodType;
  readOnly: boolean;
  run: (ctx: ToolContext, input: z.output<S>) => Promise<object>;
  summary: (result: never, input: never, ctx: ToolContext) => string;
}

/** A tool whose run answers what its output schema describes (the compiler checks it). */
const tool = <S extends z.ZodType, R extends object>(
  t: Omit<Tool<S>, "output" | "run" | "summary"> & {
    output: z.ZodType<R>;
    run: (ctx: ToolContext, input: z.output<S>) => Promise<NoInfer<R>>;
    summary: (result: R, input: z.output<S>, ctx: ToolContext) => string;
  },
): Tool => t as unknown as Tool;

function mirror<Q extends z.ZodType | undefined, B extends z.ZodType | undefined, R extends z.ZodType>(op: {
  method: Method;
  path: string;
  scope?: Scope;
  query: Q;
  body: B;
  response: R;
}) {
  if (!op.scope) throw new Error(`${op.method} ${op.path} declares no scope: an MCP tool needs one`);
  const input = (op.query ?? op.body) as Q extends z.ZodType ? Q : NonNullable<B>;
  return { scope: op.scope, input, output: op.response, readOnly: op.method === "GET" };
}

const idempotencyKey = z
  .string()
  .regex(new RegExp(IDEMPOTENCY_KEY_PATTERN), "must be 1 to 255 printable ASCII characters")
  .optional()
  .describe("Optional. Any unique string for this send (a UUID): calling again with the same key and arguments within 24 hours returns the first result instead of sending twice. Use it when you retry after an error or a timeout");

/** A send that an idempotency key makes safe to retry: the record is the one POST on `path` keeps, so REST and MCP share it. */
async function once<T extends object>(ctx: ToolContext, path: string, key: string | undefined, input: object, run: () => Promise<T>): Promise<T> {
  if (!key) return run();
  const outcome = await idempotent(ctx.actor, key, requestHash("POST", path, canonicalJson(input)), "POST", path, async () => ({ status: 200, body: await run() }));
  if (outcome.status >= 400) throw storedRefusal(outcome.body);
  return outcome.body as T;
}

function storedRefusal(body: object): ApiError {
  const { error } = body as { error?: { code?: string; message?: string; param?: string } };
  const code = error?.code && error.code in ERROR_CODES ? (error.code as ErrorCode) : "internal_error";
  return new ApiError(code, error?.message ?? "The first call with this idempotency_key failed.", { param: error?.param });
}

const page = (what: string) => (r: { data: unknown[]; has_more: boolean; next_cursor: string | null }) =>
  `${r.data.length} ${what}${r.data.length === 1 ? "" : "s"}${r.has_more ? `; more with cursor ${r.next_cursor}` : ""}.`;

const at = (ms: number) => new Date(ms).toISOString();
const NOT_SENT = "it has not been sent";

type OutboxItem = z.output<typeof R.OutboxItemSchema>;
type HoldReason = NonNullable<OutboxItem["hold_reason"]>;

function hold(reason: HoldReason, until: number | null): string {
  const till = until === null ? "" : ` until ${at(until)}`;
  switch (reason) {
    case "approval":
      return "held for the owner's approval";
    case "scheduled":
      return until === null ? "scheduled" : `scheduled for ${at(until)}`;
    case "quiet_hours":
      return `held by the line's quiet hours${till}`;
    case "new_contact_budget":
      return `held by the line's new-contact budget${till || " until a slot frees"}`;
    case "line_rate":
      return `waiting its turn at the line's sending pace${till}`;
    case "line_unavailable":
      return "waiting for the line's provider, which cannot be reached now";
  }
}

function outboxState(r: OutboxItem): string {
  switch (r.status) {
    case "pending":
      return `${r.id} is ${r.hold_reason ? hold(r.hold_reason, r.not_before) : "pending: it goes out shortly"}; ${NOT_SENT}.`;
    case "claimed":
      return `${r.id} is being sent now.`;
    case "sent":
      return `${r.id} was sent${r.completed_at ? ` at ${at(r.completed_at)}` : ""}.`;
    default:
      if (r.error === "canceled") return `${r.id} was canceled; it was not sent.`;
      if (r.error === "rejected") return `${r.id} was rejected by the owner; it was not sent.`;
      return `${r.id} failed (${r.error ?? "unknown error"}); it was not sent.`;
  }
}

// What holds a write is known at once for an approval or a send_at; quiet hours and budgets are
// decided at its turn, so get_outbox_item tells those.
const accepted = (kind: string) => (r: { id: string }, input: object, { actor }: ToolContext) => {
  const sendAt = "send_at" in input && typeof input.send_at === "number" && input.send_at > Date.now() ? input.send_at : null;
  const waits = actor.guardrails?.require_approval && GUARDED_KINDS.includes(kind) ? hold("approval", null) : sendAt ? hold("scheduled", sendAt) : null;
  return `Accepted as ${r.id}${waits ? `: ${waits}; ${NOT_SENT}` : ", pending"}. Follow it with get_outbox_item.`;
};

const WaitResultSchema = z.union([
  z.object({ object: z.literal("wait_result"), status: z.literal("replied"), message: R.MessageSchema }),
  z.object({ object: z.literal("wait_result"), status: z.literal("timeout"), waited_seconds: z.number().int().describe("How long it waited, in seconds") }),
]);

const ReadMessagesInput = ListMessagesQuery.pick({ limit: true, cursor: true, query: true }).extend({
  from: ListChatsQuery.shape.from,
  to: z.string().trim().min(1, "must not be empty").max(320).describe("The chat: the contact's phone number or handle, or a cht_ chat ID"),
});

const SendMessageInput = SendMessageBody.extend({ idempotency_key: idempotencyKey });
const ReactInput = SendReactionBody.extend({ idempotency_key: idempotencyKey });

export const TOOLS: readonly Tool[] = [
  tool({
    name: "list_lines",
    title: "List lines",
    description:
      "The lines (phone numbers or iMessage accounts) this API key may send from, oldest first. Each line's `handle` or `id` is the `from` of every other tool. Check `status` (connected, degraded, disconnected) and `service` (imessage, sms, auto).",
    ...mirror(OPERATIONS.listLines),
    run: ({ actor }, input) => listLines(actor, input),
    summary: page("line"),
  }),
  tool({
    name: "list_chats",
    title: "List chats",
    description:
      "The conversations of a line, most recent activity first. A chat's `id` (cht_...) or its `identifier` (the contact's number or handle) is the `to` of the other tools. `paused_at` set means the owner has taken the chat over: do not write to it.",
    ...mirror(OPERATIONS.listChats),
    run: ({ actor }, input) => listChats(actor, input),
    summary: page("chat"),
  }),
  tool({
    name: "read_messages",
    title: "Read messages",
    description:
      "A chat's messages, newest first, `limit` per page (1 to 100, default 20); pass `next_cursor` as `cursor` for older ones. `is_from_me` is true for messages the line sent. Optional `query` searches the text.",
    ...mirror(OPERATIONS.listMessages),
    input: ReadMessagesInput,
    output: MessagePage,
    run: ({ actor }, input) => listMessages(actor, input),
    summary: page("message"),
  }),
  tool({
    name: "send_message",
    title: "Send a message",
    description:
      "Sends text (up to 20,000 characters) and/or one uploaded file (file_ ID) from a line to a chat, optionally as a reply (`reply_to`: a msg_ ID in that chat) or scheduled (`send_at`: Unix ms). The contact must have written to the line first. It answers at once with an outbox item that is `pending`; delivery happens after (get_outbox_item). If the key needs approval, the item waits with hold_reason \"approval\" until the owner decides. Refusals: recipient_not_allowed (not on the key's allow list), reply_required (wait for the contact to answer), key_send_limit_exceeded, chat_paused (a person took over the chat).",
    ...mirror(OPERATIONS.sendMessage),
    input: SendMessageInput,
    run: (ctx, { idempotency_key, ...input }) => once(ctx, OPERATIONS.sendMessage.path, idempotency_key, input, () => sendMessage(ctx.actor, input, ctx.requestId)),
    summary: accepted("message"),
  }),
  tool({
    name: "react",
    title: "React to a message",
    description:
      "Adds a tapback (love, like, dislike, laugh, emphasize, question) to a message in a chat, or removes the line's earlier one with `remove: true`. Needs a line with advanced features.",
    ...mirror(OPERATIONS.sendReaction),
    input: ReactInput,
    run: (ctx, { idempotency_key, ...input }) => once(ctx, OPERATIONS.sendReaction.path, idempotency_key, input, () => sendReaction(ctx.actor, input, ctx.requestId)),
    summary: accepted("reaction"),
  }),
  tool({
    name: "mark_read",
    title: "Mark a chat read",
    description: "Sends a read receipt in a chat: the contact sees that their messages were read. Needs a line with advanced features.",
    ...mirror(OPERATIONS.sendReceipt),
    run: ({ actor, requestId }, input) => sendReceipt(actor, input, requestId),
    summary: accepted("receipt"),
  }),
  tool({
    name: "set_typing",
    title: "Show or stop typing",
    description: 'Shows the typing indicator in a one-to-one chat (`state: "on"`) or stops it (`"off"`), e.g. while you prepare a long answer. Needs a line with advanced features.',
    ...mirror(OPERATIONS.sendTyping),
    run: ({ actor, requestId }, input) => sendTyping(actor, input, requestId),
    summary: accepted("typing"),
  }),
  tool({
    name: "get_outbox_item",
    title: "Get a send's status",
    description:
      "The state of a send by its obx_ ID: `pending` (with `hold_reason` and `not_before` when it waits: scheduled, quiet_hours, new_contact_budget, line_rate, line_unavailable, approval), `claimed` (on its way), `sent`, or `failed` with `error` (\"rejected\": the owner declined it; \"canceled\"; \"no_fallback_line\": the recipient has no iMessage and no SMS line of the pool may send it for this key).",
    ...mirror(OPERATIONS.getOutbox),
    input: OutboxIdQuery,
    output: R.OutboxItemSchema,
    run: ({ actor }, input) => getOutboxItem(actor, input.id),
    summary: outboxState,
  }),
  tool({
    name: "cancel_send",
    title: "Cancel a pending send",
    description: "Cancels a send that is still pending (scheduled, held, or waiting its turn): it ends failed with error \"canceled\". A send already on its way, or approved by the owner to go now, cannot be canceled (outbox_item_not_cancelable).",
    ...mirror(OPERATIONS.cancelOutboxItem),
    run: ({ actor }, input) => cancelOutboxItem(actor, input.id),
    summary: outboxState,
  }),
  tool({
    name: "wait_for_reply",
    title: "Wait for a reply",
    description:
      "Blocks until the contact writes the next message in a chat, for at most `timeout_seconds` (1 to 120, default 50), and returns that message (`status: \"replied\"`) or `status: \"timeout\"`. Pass `since` (Unix ms, e.g. when you sent your message) to also catch a reply that arrived before this call. Call it again after a timeout to keep waiting.",
    scope: "messages:read",
    input: WaitForReplyInput,
    output: WaitResultSchema,
    readOnly: true,
    run: ({ actor, signal, recheckKey }, input) => waitForReply(actor, input, { signal, recheckKey }),
    summary: (r) =>
      r.status === "replied" ? `Reply from ${r.message.sender ?? "the contact"}: ${(r.message.text ?? "(attachment)").slice(0, 200)}` : `No reply within ${r.waited_seconds} s.`,
  }),
  tool({
    name: "get_capacity",
    title: "What a line can still send",
    description:
      "Per line (or each line of a pool_ ID): status, the new-contact budgets left this hour and day, quiet hours, the sends waiting by reason, and when a send to a new contact could next go.",
    ...mirror(OPERATIONS.getCapacity),
    run: ({ actor }, input) => getCapacity(actor, input),
    summary: (r) => r.lines.map((l) => `${l.handle}: ${l.status}`).join("; ") || "No lines.",
  }),
];

export const TOOLS_BY_NAME: ReadonlyMap<string, Tool> = new Map(TOOLS.map((t) => [t.name, t]));

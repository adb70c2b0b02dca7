import { config } from "../../../kernel/config";
import { missingParam } from "../../../kernel/errors";
import { CHAT_ACTIVITY_KINDS, type LiveEvent, liveEvents } from "../../../events/live";
import { ListMessagesQuery, OutboxQuery } from "../../../services/schemas/v1";
import { resolveChat } from "../../../services/messaging/chats";
import { resolveLine } from "../../../services/lines/lines";
import { findOutboxItem, outboxScope } from "../../../services/messaging/outbox";
import { acquireStreamSlot } from "../../../services/webhooks/stream-slots";
import { inScope, whereForActor } from "../../../services/lines/tenancy";
import { builder } from "../builder";
import type { GraphQLContext } from "../context";
import { parseArgs } from "../inputs";
import { OutboxStatus } from "./outbox";

// Live updates over server-sent events (server/events/live.ts): inbound messages and outbox
// status changes on the caller's lines. Filters are checked like the matching queries when
// the subscription starts (a foreign line is line_not_found); every event is matched against
// the caller's account and lines, and its object is loaded through the same filter. Each open
// subscription takes a stream slot (the caps of GET /v1/listen), and its key is checked again
// on every event and at least every API_KEY_CACHE_SECONDS: once revoked or expired, the
// subscription's last event is that error (invalid_api_key) and the stream completes.

type EventOf<T extends LiveEvent["type"]> = Extract<LiveEvent, { type: T }>;

/**
 * `source` while `check` passes (before each event and every `everyMs`); a failing check ends it,
 * thrown once from next(). `onEnd` runs once, however it ends.
 */
function whileAllowed<T>(source: AsyncIterableIterator<T>, check: () => Promise<void>, everyMs: number, onEnd: () => void): AsyncIterableIterator<T> {
  let failure: { error: unknown } | null = null;
  let finished = false;
  const fail = (error: unknown) => {
    failure ??= { error };
    void source.return?.();
  };
  const timer = setInterval(() => check().catch(fail), everyMs);
  timer.unref?.();
  const finish = () => {
    if (finished) return;
    finished = true;
    clearInterval(timer);
    onEnd();
  };
  return {
    [Symbol.asyncIterator]() {
      return this;
    },
    async next() {
      const result = finished ? { value: undefined, done: true as const } : await source.next();
      if (!result.done && !failure) await check().catch(fail);
      if (failure && !finished) {
        finish();
        throw failure.error;
      }
      if (result.done || failure) {
        finish();
        return { value: undefined, done: true };
      }
      return result;
    },
    async return() {
      finish();
      await source.return?.();
      return { value: undefined, done: true };
    },
  };
}

/** The events of one type this caller may see, narrowed to a line (`from`) and a chat (`to`). */
async function subscribeTo<T extends LiveEvent["type"]>(
  type: T,
  ctx: GraphQLContext,
  filters: { from?: string; to?: string; outboxId?: string },
): Promise<AsyncIterable<EventOf<T>>> {
  const scope = await whereForActor(ctx.actor);
  if (filters.to && !filters.from) throw missingParam("from");
  const line = filters.from ? await resolveLine(ctx.actor, filters.from) : null;
  const chat = line && filters.to ? await resolveChat(ctx.actor, line, filters.to) : null;
  const outboxId = filters.outboxId ? (await findOutboxItem(ctx.actor, filters.outboxId)).id : null;
  const wanted = (e: LiveEvent): e is EventOf<T> =>
    e.type === type &&
    inScope(scope, e) &&
    (!line || e.lineId === line.id) &&
    (!chat || e.chatId === chat.id) &&
    (!outboxId || (e.type === "outbox.status" && e.outboxId === outboxId)) &&
    (e.type !== "outbox.status" || !ctx.actor.guardrails || e.apiKeyId === ctx.actor.keyId);
  const release = acquireStreamSlot(ctx.actor);
  const everyMs = Math.max(1_000, config().API_KEY_CACHE_SECONDS * 1000);
  return whileAllowed(liveEvents(wanted) as AsyncIterableIterator<EventOf<T>>, ctx.recheckCaller, everyMs, release);
}

const OutboxItemUpdate = builder.objectRef<EventOf<"outbox.status">>("OutboxItemUpdate").implement({
  description: "One step of an outbox item. `status` is the step; `item` is the item as it is when the update is sent, which may be further along.",
  fields: (t) => ({
    status: t.field({ type: OutboxStatus, resolve: (event) => event.status }),
    outboxId: t.exposeString("outboxId"),
    item: t.prismaField({
      type: "OutboxItem",
      resolve: async (query, event, _args, ctx) =>
        ctx.prisma.outboxItem.findFirstOrThrow({ ...query, where: { id: event.outboxId, ...(await outboxScope(ctx.actor)) } }),
    }),
  }),
});

const ChatActivityKind = builder.enumType("ChatActivityKind", {
  description: "What changed in a chat: a contact's reaction, typing or read receipt, or a sent message's delivery status.",
  values: CHAT_ACTIVITY_KINDS,
});

const ChatActivity = builder.objectRef<EventOf<"chat.activity">>("ChatActivity").implement({
  description: "Something changed in a chat besides a new message; read the chat again to show it. `typing` is the contact's state for `typing`.",
  fields: (t) => ({
    kind: t.field({ type: ChatActivityKind, resolve: (event) => event.kind }),
    chatId: t.exposeString("chatId"),
    lineId: t.exposeString("lineId"),
    typing: t.boolean({ nullable: true, resolve: (event) => event.typing ?? null }),
  }),
});

builder.subscriptionFields((t) => ({
  chatActivity: t.field({
    type: ChatActivity,
    description: "Reactions, typing, read receipts and delivery updates in the caller's chats; `from` narrows to one line, `to` to one chat of it.",
    authScopes: { scope: "messages:read" },
    args: { from: t.arg.string(), to: t.arg.string() },
    subscribe: (_root, args, ctx) => subscribeTo("chat.activity", ctx, parseArgs(ListMessagesQuery, args)),
    resolve: (event: EventOf<"chat.activity">) => event,
  }),
  messageReceived: t.prismaField({
    type: "Message",
    description: "Each new inbound message on the caller's lines; `from` narrows to one line, `to` to one chat of it.",
    authScopes: { scope: "messages:read" },
    args: { from: t.arg.string(), to: t.arg.string() },
    subscribe: (_root, args, ctx) => subscribeTo("message.received", ctx, parseArgs(ListMessagesQuery, args)),
    resolve: async (query, event: EventOf<"message.received">, _args, ctx) =>
      ctx.prisma.message.findFirstOrThrow({ ...query, where: { id: event.messageId, ...(await whereForActor(ctx.actor)) } }),
  }),
  outboxItemUpdated: t.field({
    type: OutboxItemUpdate,
    description:
      "Outbox items of the caller's lines as they are accepted (pending), sent or failed; `from` narrows to one line, `to` to one chat, `id` to one item.",
    authScopes: { scope: "outbox:read" },
    args: { from: t.arg.string(), to: t.arg.string(), id: t.arg.string() },
    subscribe: (_root, args, ctx) => {
      const { from, to, id } = parseArgs(OutboxQuery.extend({ to: ListMessagesQuery.shape.to }), args);
      return subscribeTo("outbox.status", ctx, { from, to, outboxId: id });
    },
    resolve: (event: EventOf<"outbox.status">) => event,
  }),
}));

import { z } from "zod";
import { PageQuery } from "../../../wire/pagination";
import { ListChatsQuery, OutboxQuery } from "../../../services/schemas/v1";
import { getChat, listChats, markChatRead } from "../../../services/messaging/chats";
import { InboxQuery, listInbox, unsentSends } from "../../../services/messaging/inbox";
import { ConnectLineBody, connectLine, listConnections, TestLineBody, testLine } from "../../../services/lines/line-connections";
import { AddLineBody, addLine } from "../../../services/lines/add-line";
import { CreateSimulatedLineBody, createSimulatedLine, listLines, resolveLine, UpdateLineBody, updateLine } from "../../../services/lines/lines";
import { listConversation } from "../../../services/messaging/messages";
import { cancelOutboxItem, getOutboxItem, listOutbox, RescheduleBody, rescheduleOutboxItem } from "../../../services/messaging/outbox";
import { CapacityQuery, getCapacity } from "../../../services/lines/capacity";
import { linePolicy, SendPolicyInput, setLinePolicy } from "../../../services/lines/send-policy";
import { serializeLine } from "../../../wire/serializers";
import { parseWith } from "../../http/validation";
import { activateSandbox, getSandbox } from "../../../services/lines/sandbox";
import { retrySend, SendMessageBody, sendMessage } from "../../../services/messaging/send";
import { ApprovalQueueQuery, approveSend, chatTakeover, countWaitingApprovals, listApprovalQueue, rejectSend } from "../../../services/messaging/approvals";
import { pauseChat, resumeChat } from "../../../services/messaging/takeover";
import { protectedProcedure, router } from "../init";

const LineIdBody = z.object({ line_id: z.string().trim().min(1, "must not be empty").max(100) });

export const linesRouter = router({
  list: protectedProcedure.input(PageQuery.partial().optional()).query(({ ctx, input }) => listLines(ctx.actor, { limit: input?.limit ?? 100, cursor: input?.cursor })),
  create: protectedProcedure.input(CreateSimulatedLineBody).mutation(({ ctx, input }) => createSimulatedLine(ctx.actor, input)),
  update: protectedProcedure.input(UpdateLineBody).mutation(({ ctx, input }) => updateLine(ctx.actor, input)),
  /** The account's own lines with their provider, its settings (never a secret), health and capabilities. */
  connections: protectedProcedure.query(({ ctx }) => listConnections(ctx.actor.accountId)),
  /**
   * Tests new settings, then connects the line to them (or back to simulated), probes it and
   * registers its webhook. A failing test saves nothing (saved: false) unless save_failing.
   */
  connect: protectedProcedure
    .input(ConnectLineBody.extend({ save_failing: z.boolean().optional() }))
    .mutation(({ ctx, input: { save_failing, ...input } }) => connectLine(ctx.actor.accountId, input, { testFirst: { saveFailing: save_failing === true } })),
  /** Adds a provider line: tests the settings, then creates and connects it (or, confirmed, saves a failing one). */
  add: protectedProcedure.input(AddLineBody).mutation(({ ctx, input }) => addLine(ctx.actor.accountId, input)),
  /** Probes a line's saved connection again. */
  test: protectedProcedure.input(TestLineBody).mutation(({ ctx, input }) => testLine(ctx.actor.accountId, input.line_id)),
  /** A line (one of the account's, or the shared sandbox line, read-only) with its effective send policy. */
  policy: protectedProcedure.input(LineIdBody).query(async ({ ctx, input }) => {
    const line = await resolveLine(ctx.actor, input.line_id, "line_id");
    return { line: serializeLine(line), policy: linePolicy(line), editable: !line.isSandbox };
  }),
  /**
   * Changes a line's send policy (fields left out keep their value; null clears a budget or the
   * quiet hours). Parsed here, not by tRPC, so a refusal names its field (param
   * "quiet_hours.timezone") with a sentence the page shows next to it.
   */
  setPolicy: protectedProcedure
    .input(LineIdBody.extend({ policy: z.record(z.string(), z.unknown()) }))
    .mutation(async ({ ctx, input }) => {
      const change = parseWith(SendPolicyInput, input.policy);
      const { line, policy } = await setLinePolicy(ctx.actor.accountId, input.line_id, change);
      return { line: serializeLine(line), policy, editable: true };
    }),
  /** What a line (or each line of a pool) can still send, and what waits: GET /v1/capacity. */
  capacity: protectedProcedure.input(CapacityQuery).query(({ ctx, input }) => getCapacity(ctx.actor, input)),
});

const chatId = z.string().trim().min(1).max(100);

export const chatsRouter = router({
  list: protectedProcedure
    .input(ListChatsQuery.extend({ search: z.string().trim().max(200).optional() }))
    .query(({ ctx, input }) => listChats(ctx.actor, input)),
  get: protectedProcedure.input(z.object({ id: z.string().trim().min(1).max(100) })).query(({ ctx, input }) => getChat(ctx.actor, input.id)),
  messages: protectedProcedure
    .input(PageQuery.extend({ chat_id: z.string().trim().min(1).max(100) }))
    .query(({ ctx, input }) => listConversation(ctx.actor, input)),
  /** Sends from the page: the same write as POST /v1/messages. */
  send: protectedProcedure.input(SendMessageBody).mutation(({ ctx, input }) => sendMessage(ctx.actor, input, ctx.requestId)),
  /** The inbox: chats of every line (or one) with their last message, unread count and last send's state. */
  inbox: protectedProcedure.input(InboxQuery).query(({ ctx, input }) => listInbox(ctx.actor, input)),
  /** A chat's sends that have no message yet (pending, or failed with the reason). */
  unsent: protectedProcedure.input(z.object({ chat_id: chatId })).query(({ ctx, input }) => unsentSends(ctx.actor, input.chat_id)),
  /** The owner opened the chat: its messages until now are read. */
  markRead: protectedProcedure.input(z.object({ id: chatId })).mutation(({ ctx, input }) => markChatRead(ctx.actor, input.id)),
  /** Sends a failed message again, as a new outbox item. */
  retry: protectedProcedure.input(z.object({ id: z.string().trim().min(1).max(100) })).mutation(({ ctx, input }) => retrySend(ctx.actor, input.id, ctx.requestId)),
  /** Whether automated sending is paused in the chat, since when and by whom (an email or a key's name). */
  takeover: protectedProcedure.input(z.object({ id: chatId })).query(({ ctx, input }) => chatTakeover(ctx.actor, input.id)),
  /** Human takeover: keys with guardrails may not send to the chat until it is resumed (POST /v1/chats/pause). */
  pause: protectedProcedure.input(z.object({ id: chatId })).mutation(({ ctx, input }) => pauseChat(ctx.actor, input.id)),
  resume: protectedProcedure.input(z.object({ id: chatId })).mutation(({ ctx, input }) => resumeChat(ctx.actor, input.id)),
});

const OutboxId = z.object({ id: z.string().trim().min(1).max(100) });

export const outboxRouter = router({
  /** Held items are pending with hold_reason and not_before (serializeOutboxItem). */
  list: protectedProcedure.input(OutboxQuery.omit({ id: true })).query(({ ctx, input }) => listOutbox(ctx.actor, input)),
  get: protectedProcedure.input(OutboxId).query(({ ctx, input }) => getOutboxItem(ctx.actor, input.id)),
  /** DELETE /v1/outbox?id=: a pending item ends failed with error "canceled". */
  cancel: protectedProcedure.input(OutboxId).mutation(({ ctx, input }) => cancelOutboxItem(ctx.actor, input.id)),
  /** PATCH /v1/outbox?id=: a pending item is held until send_at. */
  reschedule: protectedProcedure
    .input(RescheduleBody.extend(OutboxId.shape))
    .mutation(({ ctx, input: { id, ...body } }) => rescheduleOutboxItem(ctx.actor, id, body)),
  /** Sends waiting for approval, oldest first, with their chat, line, key and the chat's last messages. */
  approvals: protectedProcedure.input(ApprovalQueueQuery).query(({ ctx, input }) => listApprovalQueue(ctx.actor, input)),
  /** How many sends wait for approval (the nav's badge). */
  approvalCount: protectedProcedure.query(({ ctx }) => countWaitingApprovals(ctx.actor)),
  /** POST /v1/outbox/approve?id=: a send waiting for approval goes (or waits for its send_at). */
  approve: protectedProcedure.input(OutboxId).mutation(({ ctx, input }) => approveSend(ctx.actor, input.id)),
  /** POST /v1/outbox/reject?id=: it ends failed with error "rejected". */
  reject: protectedProcedure.input(OutboxId).mutation(({ ctx, input }) => rejectSend(ctx.actor, input.id)),
});

export const sandboxRouter = router({
  get: protectedProcedure.query(({ ctx }) => getSandbox(ctx.actor)),
  activate: protectedProcedure.mutation(({ ctx }) => activateSandbox(ctx.actor)),
});

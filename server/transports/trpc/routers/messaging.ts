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
import { linePolicy, SendPolicyInput, setLinePolicy } from "../../../services/lines/set-line-policy";
import { serializeLine } from "../../../wire/serializers";
import { parseWith } from "../../../wire/parse";
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
  connections: protectedProcedure.query(({ ctx }) => listConnections(ctx.actor.accountId)),
  /** A failing test of the new settings saves nothing (saved: false) unless save_failing. */
  connect: protectedProcedure
    .input(ConnectLineBody.extend({ save_failing: z.boolean().optional() }))
    .mutation(({ ctx, input: { save_failing, ...input } }) => connectLine(ctx.actor.accountId, input, { testFirst: { saveFailing: save_failing === true } })),
  add: protectedProcedure.input(AddLineBody).mutation(({ ctx, input }) => addLine(ctx.actor.accountId, input)),
  test: protectedProcedure.input(TestLineBody).mutation(({ ctx, input }) => testLine(ctx.actor.accountId, input.line_id)),
  policy: protectedProcedure.input(LineIdBody).query(async ({ ctx, input }) => {
    const line = await resolveLine(ctx.actor, input.line_id, "line_id");
    return { line: serializeLine(line), policy: linePolicy(line), editable: !line.isSandbox };
  }),
  /** Parsed here, not by tRPC, so a refusal names its field (param "quiet_hours.timezone") for the page. */
  setPolicy: protectedProcedure
    .input(LineIdBody.extend({ policy: z.record(z.string(), z.unknown()) }))
    .mutation(async ({ ctx, input }) => {
      const change = parseWith(SendPolicyInput, input.policy);
      const { line, policy } = await setLinePolicy(ctx.actor.accountId, input.line_id, change);
      return { line: serializeLine(line), policy, editable: true };
    }),
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
  send: protectedProcedure.input(SendMessageBody).mutation(({ ctx, input }) => sendMessage(ctx.actor, input, ctx.requestId)),
  inbox: protectedProcedure.input(InboxQuery).query(({ ctx, input }) => listInbox(ctx.actor, input)),
  unsent: protectedProcedure.input(z.object({ chat_id: chatId })).query(({ ctx, input }) => unsentSends(ctx.actor, input.chat_id)),
  markRead: protectedProcedure.input(z.object({ id: chatId })).mutation(({ ctx, input }) => markChatRead(ctx.actor, input.id)),
  retry: protectedProcedure.input(z.object({ id: z.string().trim().min(1).max(100) })).mutation(({ ctx, input }) => retrySend(ctx.actor, input.id, ctx.requestId)),
  takeover: protectedProcedure.input(z.object({ id: chatId })).query(({ ctx, input }) => chatTakeover(ctx.actor, input.id)),
  pause: protectedProcedure.input(z.object({ id: chatId })).mutation(({ ctx, input }) => pauseChat(ctx.actor, input.id)),
  resume: protectedProcedure.input(z.object({ id: chatId })).mutation(({ ctx, input }) => resumeChat(ctx.actor, input.id)),
});

const OutboxId = z.object({ id: z.string().trim().min(1).max(100) });

export const outboxRouter = router({
  list: protectedProcedure.input(OutboxQuery.omit({ id: true })).query(({ ctx, input }) => listOutbox(ctx.actor, input)),
  get: protectedProcedure.input(OutboxId).query(({ ctx, input }) => getOutboxItem(ctx.actor, input.id)),
  cancel: protectedProcedure.input(OutboxId).mutation(({ ctx, input }) => cancelOutboxItem(ctx.actor, input.id)),
  reschedule: protectedProcedure
    .input(RescheduleBody.extend(OutboxId.shape))
    .mutation(({ ctx, input: { id, ...body } }) => rescheduleOutboxItem(ctx.actor, id, body)),
  approvals: protectedProcedure.input(ApprovalQueueQuery).query(({ ctx, input }) => listApprovalQueue(ctx.actor, input)),
  approvalCount: protectedProcedure.query(({ ctx }) => countWaitingApprovals(ctx.actor)),
  approve: protectedProcedure.input(OutboxId).mutation(({ ctx, input }) => approveSend(ctx.actor, input.id)),
  reject: protectedProcedure.input(OutboxId).mutation(({ ctx, input }) => rejectSend(ctx.actor, input.id)),
});

export const sandboxRouter = router({
  get: protectedProcedure.query(({ ctx }) => getSandbox(ctx.actor)),
  activate: protectedProcedure.mutation(({ ctx }) => activateSandbox(ctx.actor)),
});

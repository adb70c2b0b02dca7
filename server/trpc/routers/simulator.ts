import { SimulatorInboxQuery, SimulatorMessageBody, SimulatorReactionBody, SimulatorTypingBody } from "../../schemas/simulator";
import { listMessages } from "../../services/messages";
import { simulateMessage, simulateReaction, simulateTyping } from "../../services/simulator";
import { protectedProcedure, router } from "../init";

// The virtual phone: what /api/simulator does, for the dashboard's simulator page.
export const simulatorRouter = router({
  message: protectedProcedure.input(SimulatorMessageBody).mutation(({ ctx, input }) => simulateMessage(ctx.actor, input)),
  reaction: protectedProcedure.input(SimulatorReactionBody).mutation(({ ctx, input }) => simulateReaction(ctx.actor, input)),
  typing: protectedProcedure.input(SimulatorTypingBody).mutation(({ ctx, input }) => simulateTyping(ctx.actor, input)),
  /** What the phone received from the line (the line's replies), newest first. */
  inbox: protectedProcedure
    .input(SimulatorInboxQuery)
    .query(({ ctx, input }) => listMessages(ctx.actor, { from: input.line, to: input.contact, limit: input.limit, cursor: input.cursor, fromMe: true })),
});

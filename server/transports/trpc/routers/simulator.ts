import { SimulatorInboxQuery, SimulatorMessageBody, SimulatorReactionBody, SimulatorTypingBody } from "../../../services/schemas/simulator-requests";
import { simulateMessage, simulateReaction, simulateTyping, simulatorInbox, simulatorStatus } from "../../../services/inbound/simulated-phone";
import { protectedProcedure, router } from "../init";

// The virtual phone: what /api/simulator does, for the dashboard's simulator page.
export const simulatorRouter = router({
  message: protectedProcedure.input(SimulatorMessageBody).mutation(({ ctx, input }) => simulateMessage(ctx.actor, input)),
  reaction: protectedProcedure.input(SimulatorReactionBody).mutation(({ ctx, input }) => simulateReaction(ctx.actor, input)),
  typing: protectedProcedure.input(SimulatorTypingBody).mutation(({ ctx, input }) => simulateTyping(ctx.actor, input)),
  inbox: protectedProcedure.input(SimulatorInboxQuery).query(({ ctx, input }) => simulatorInbox(ctx.actor, input)),
  /** Whether SIMULATOR_ENABLED is on: the page says the simulator is off instead of failing. */
  status: protectedProcedure.query(() => simulatorStatus()),
});

import { z } from "zod";
import { addPoolLine, createPool, deletePool, listPools, PoolName, removePoolLine } from "../../../services/pools/pools";
import { protectedProcedure, router } from "../init";

// Sender pools (pool_...): named sets of the account's lines; a pool's ID is a send's `from`.

const id = z.string().trim().min(1, "must not be empty").max(100);
const PoolLineBody = z.object({ pool_id: id, line_id: id });

export const poolsRouter = router({
  list: protectedProcedure.query(({ ctx }) => listPools(ctx.actor)),
  create: protectedProcedure
    .input(z.object({ name: PoolName, line_ids: z.array(id).max(100, "at most 100 lines") }))
    .mutation(({ ctx, input }) => createPool(ctx.actor.accountId, input)),
  addLine: protectedProcedure.input(PoolLineBody).mutation(({ ctx, input }) => addPoolLine(ctx.actor.accountId, input.pool_id, input.line_id)),
  removeLine: protectedProcedure.input(PoolLineBody).mutation(({ ctx, input }) => removePoolLine(ctx.actor.accountId, input.pool_id, input.line_id)),
  delete: protectedProcedure.input(z.object({ id })).mutation(({ ctx, input }) => deletePool(ctx.actor.accountId, input.id)),
});

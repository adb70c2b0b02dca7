import { z } from "zod";
import { addPoolLine, createPool, deletePool, listPools, PoolName, type PoolView, removePoolLine } from "../../../services/pools/pools";
import { builder } from "../builder";
import { parseArgs, renamingParams } from "../inputs";
import { OWNER_ONLY, ownerAccount } from "../owner";

// Sender pools (GET /v1/pools, lines:read): a named set of an account's lines; a pool_ ID is
// a `from` of sendMessage and sendAudioMessage, whose line is chosen per contact. Creating and
// changing pools is the owner's (../owner.ts), like the lines themselves.

const id = z.string().trim().min(1, "must not be empty").max(100);

const CreatePoolArgs = z.object({
  name: PoolName,
  line_ids: z.array(id).min(1, "must name at least one line").max(100, "at most 100 lines per call"),
});
const PoolLineArgs = z.object({ pool_id: id, line_id: id });
const PoolIdArgs = z.object({ id });

const ownerOf = (actor: Parameters<typeof ownerAccount>[0]) =>
  ownerAccount(actor, "Managing pools", "API keys cannot change which lines an account sends from.");

const Pool = builder.objectRef<PoolView>("Pool").implement({
  description: "A sender pool: a named set of the account's lines. A line-restricted key sees only its own lines of a pool.",
  fields: (t) => ({
    id: t.exposeID("id"),
    name: t.exposeString("name"),
    lineIds: t.exposeStringList("line_ids", { description: "Its lines (ln_ IDs), in the order they were added." }),
    lines: t.prismaField({
      type: ["Line"],
      description: "Its lines, in the order they were added.",
      authScopes: { scope: "lines:read" },
      resolve: async (query, pool, _args, ctx) => {
        const rows = await ctx.prisma.line.findMany({ ...query, where: { id: { in: pool.line_ids } } });
        const byId = new Map(rows.map((l) => [l.id, l]));
        return pool.line_ids.flatMap((lineId) => byId.get(lineId) ?? []);
      },
    }),
    createdAt: t.field({ type: "Timestamp", resolve: (p) => p.created_at }),
  }),
});

const DeletedPool = builder.objectRef<{ id: string; deleted: true }>("DeletedPool").implement({
  fields: (t) => ({ id: t.exposeID("id"), deleted: t.exposeBoolean("deleted") }),
});

builder.queryFields((t) => ({
  pools: t.field({
    type: [Pool],
    description: "GET /v1/pools: the account's pools, oldest first (one list: an account has few). A line-restricted key sees the pools that hold one of its lines.",
    authScopes: { scope: "lines:read" },
    resolve: async (_root, _args, ctx) => (await listPools(ctx.actor)).data,
  }),
}));

builder.mutationFields((t) => ({
  createPool: t.field({
    type: Pool,
    description: `Create a pool of the account's lines (not the sandbox line); names are unique per account. ${OWNER_ONLY}`,
    args: {
      name: t.arg.string({ required: true, description: "At most 100 characters." }),
      lineIds: t.arg.stringList({ required: true, description: "ln_ IDs of the account's lines." }),
    },
    resolve: (_root, args, ctx) => {
      const accountId = ownerOf(ctx.actor);
      return createPool(accountId, parseArgs(CreatePoolArgs, args));
    },
  }),
  addPoolLine: t.field({
    type: Pool,
    description: `Add one of the account's lines to a pool (nothing changes when it is in it already). ${OWNER_ONLY}`,
    args: { poolId: t.arg.string({ required: true }), lineId: t.arg.string({ required: true }) },
    resolve: (_root, args, ctx) => {
      const accountId = ownerOf(ctx.actor);
      const { pool_id, line_id } = parseArgs(PoolLineArgs, args);
      return renamingParams({ id: "pool_id", line_ids: "line_id" }, () => addPoolLine(accountId, pool_id, line_id));
    },
  }),
  removePoolLine: t.field({
    type: Pool,
    description: `Remove a line from a pool; its conversations stay on the line. ${OWNER_ONLY}`,
    args: { poolId: t.arg.string({ required: true }), lineId: t.arg.string({ required: true }) },
    resolve: (_root, args, ctx) => {
      const accountId = ownerOf(ctx.actor);
      const { pool_id, line_id } = parseArgs(PoolLineArgs, args);
      return renamingParams({ id: "pool_id" }, () => removePoolLine(accountId, pool_id, line_id));
    },
  }),
  deletePool: t.field({
    type: DeletedPool,
    description: `Delete a pool (its lines stay; sends already addressed from it keep their line). ${OWNER_ONLY}`,
    args: { id: t.arg.string({ required: true, description: "pool_ ID." }) },
    resolve: (_root, args, ctx) => {
      const accountId = ownerOf(ctx.actor);
      return deletePool(accountId, parseArgs(PoolIdArgs, args).id);
    },
  }),
}));

import { linesForActor } from "../../services/tenancy";
import { builder } from "../builder";
import { ChatConnection, CHAT_ORDER } from "./chats";

// Line: GET /v1/lines (lines:read), with its chats (chats:read).

export const Line = builder.prismaObject("Line", {
  fields: (t) => ({
    id: t.exposeID("id"),
    handle: t.exposeString("handle"),
    label: t.exposeString("label", { nullable: true }),
    service: t.exposeString("service"),
    isActive: t.exposeBoolean("isActive"),
    advancedFeatures: t.exposeBoolean("advancedFeatures"),
    isSandbox: t.exposeBoolean("isSandbox"),
    createdAt: t.expose("createdAt", { type: "Timestamp" }),
    chats: t.relatedConnection(
      "chats",
      {
        description: "The caller's chats on this line, most recent activity first.",
        cursor: "id",
        authScopes: { scope: "chats:read" },
        // On the shared sandbox line other accounts have chats too.
        query: (_args, ctx) => ({ where: { accountId: ctx.actor.accountId }, orderBy: CHAT_ORDER }),
      },
      ChatConnection,
    ),
  }),
});

export const LineConnection = builder.connectionObject({ type: Line, name: "LineConnection" }, { name: "LineEdge" });

builder.queryFields((t) => ({
  lines: t.prismaConnection(
    {
      type: "Line",
      cursor: "id",
      description: "The lines this key can use: its account's, and the sandbox line for accounts with an owner. Oldest first.",
      authScopes: { scope: "lines:read" },
      resolve: async (query, _root, _args, ctx) =>
        ctx.prisma.line.findMany({ ...query, where: await linesForActor(ctx.actor), orderBy: { id: "asc" } }),
    },
    LineConnection,
  ),
}));

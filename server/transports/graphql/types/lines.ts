import { describeLine } from "../../../services/lines/line-connections";
import { linePolicy } from "../../../services/lines/set-line-policy";
import { linesForActor } from "../../../services/lines/tenancy";
import { builder } from "../builder";
import { ChatConnection, CHAT_ORDER } from "./chats";
import { JSONScalar } from "./json";
import { isOwnerSession } from "../owner";
import { SendPolicy } from "./send-policy";

// Line: GET /v1/lines (lines:read), with its chats (chats:read), its provider and health, its
// send policy; the provider's settings for the account's owner only (see line-connections.ts).

const LINE_STATUSES = ["connected", "degraded", "disconnected"] as const;
export type LineStatusValue = (typeof LINE_STATUSES)[number];
export const LineStatus = builder.enumType("LineStatus", {
  description: "A line's health: connected while its provider answers, degraded after a failed call or probe, disconnected after 3 in a row (sends wait).",
  values: LINE_STATUSES,
});

const Line = builder.prismaObject("Line", {
  fields: (t) => ({
    id: t.exposeID("id"),
    handle: t.exposeString("handle"),
    label: t.exposeString("label", { nullable: true }),
    service: t.exposeString("service"),
    isActive: t.exposeBoolean("isActive"),
    advancedFeatures: t.exposeBoolean("advancedFeatures"),
    isSandbox: t.exposeBoolean("isSandbox"),
    createdAt: t.expose("createdAt", { type: "Timestamp" }),
    provider: t.exposeString("provider", { description: "Who carries the line: simulated (the built-in platform), bluebubbles (iMessage on a Mac), sms-gateway (SMS through an Android phone) or twilio (SMS and MMS)." }),
    status: t.field({ type: LineStatus, resolve: (l) => l.status as LineStatusValue }),
    statusReason: t.exposeString("statusReason", { nullable: true, description: "Why the line is degraded or disconnected (readable, no secrets)." }),
    lastEventAt: t.expose("lastEventAt", { type: "Timestamp", nullable: true, description: "When the provider last answered or sent an event." }),
    providerSettings: t.field({
      type: JSONScalar,
      nullable: true,
      description: `The provider's settings as shown to the owner: those that are not secret, URLs masked where they carry credentials; never a password, key or token. For the account's owner only (the dashboard's signed-in session, which also authenticates GraphQL): null for API keys, whatever their scopes.`,
      resolve: (line, _args, ctx) => (isOwnerSession(ctx.actor) ? describeLine(line).provider_settings : null),
    }),
    sendPolicy: t.field({
      type: SendPolicy,
      description: "When, and to whom, the line may send (the owner sets it: setLineSendPolicy).",
      resolve: (line) => linePolicy(line),
    }),
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

const LineConnection = builder.connectionObject({ type: Line, name: "LineConnection" }, { name: "LineEdge" });

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

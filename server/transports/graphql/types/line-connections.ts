import type { Actor } from "../../../services/access/actor";
import { PROVIDER_NAMES } from "../../../platform/registry";
import { ConnectLineBody, type ConnectionReport, connectLine, TestLineBody, testLine } from "../../../services/lines/line-connections";
import { builder } from "../builder";
import { parseArgs } from "../inputs";
import { JSONScalar } from "./json";
import { providerConfigHelp } from "../../../platform/about";
import { OWNER_ONLY, ownerAccount } from "../owner";

// Connecting a line to its provider and testing the connection: the dashboard's "Connect a
// line" (and the operator's `line connect`) for GraphQL.
//
// Owner-only (../owner.ts): a provider's settings decide where the line's messages go.

/** The owner's account ID, or session_required for an API key. */
const ownerOf = (actor: Actor) =>
  ownerAccount(actor, "Connecting or testing a line", "API keys cannot change a line's provider.");

const LineConnectionReport = builder.objectRef<ConnectionReport>("LineConnectionReport").implement({
  description: "What connecting or testing a line found. The provider's password is never part of it.",
  fields: (t) => ({
    line: t.prismaField({
      type: "Line",
      nullable: true,
      description: "The line as it is now: provider, status and, for the owner, providerSettings.",
      resolve: (query, report, _args, ctx) => ctx.prisma.line.findUnique({ ...query, where: { id: report.line.id } }),
    }),
    ok: t.boolean({ description: "Whether the provider answered with these settings.", resolve: (r) => r.probe.ok }),
    reason: t.string({
      nullable: true,
      description: "Why the probe failed, or what the line lacks although it answered (readable, no secrets).",
      resolve: (r) => r.probe.reason,
    }),
    capabilities: t.field({
      type: JSONScalar,
      nullable: true,
      description:
        "What the provider reported: for BlueBubbles server_version, os_version, private_api, helper_connected, detected_imessage, and whether reactions, typing, read_receipts, replies, voice_memos and imessage_availability work. Empty when the probe failed.",
      resolve: (r) => r.probe.capabilities,
    }),
    advancedFeatures: t.boolean({
      description: "Whether reactions, typing, read receipts, replies and voice memos work on this line (BlueBubbles: the Private API and its helper).",
      resolve: (r) => r.probe.advancedFeatures,
    }),
    warnings: t.stringList({ description: "What still deserves attention on a working connection.", resolve: (r) => r.warnings }),
  }),
});

const ConnectLineInput = builder.inputType("ConnectLineInput", {
  fields: (f) => ({
    lineId: f.string({ required: true, description: "ln_ ID of one of the account's lines (not the sandbox line)." }),
    provider: f.string({ required: true, description: `The provider: ${PROVIDER_NAMES.join(" or ")}.` }),
    providerConfig: f.field({
      type: JSONScalar,
      description:
        `The provider's settings. ${providerConfigHelp()}. Passwords, keys and tokens are stored encrypted and never returned.`,
    }),
    sendRatePerSecond: f.float({ description: "Sends per second on this line (provider lines pace their sends); 1 unless set." }),
  }),
});

builder.mutationFields((t) => ({
  connectLine: t.field({
    type: LineConnectionReport,
    description: `Connect a line to its provider, reconnect it with new settings, or switch it back to simulated: the settings are checked and stored (secrets encrypted), the provider is probed and the line's inbound webhook registered with it. A failed probe is a report with ok false (the line is then degraded), not an error. ${OWNER_ONLY}`,
    args: { input: t.arg({ type: ConnectLineInput, required: true }) },
    resolve: (_root, { input }, ctx) => {
      const accountId = ownerOf(ctx.actor);
      return connectLine(accountId, parseArgs(ConnectLineBody, input));
    },
  }),
  testLineConnection: t.field({
    type: LineConnectionReport,
    description: `Probe a line's saved connection again and record its health. ${OWNER_ONLY}`,
    args: { lineId: t.arg.string({ required: true, description: "ln_ ID of one of the account's lines." }) },
    resolve: (_root, args, ctx) => {
      const accountId = ownerOf(ctx.actor);
      return testLine(accountId, parseArgs(TestLineBody, args).line_id);
    },
  }),
}));

import type { QuietHours as QuietHoursValue } from "../../../policy/quiet-hours";
import { TestLineBody as LineIdBody } from "../../../services/lines/line-connections";
import type { SendPolicy as SendPolicyValue } from "../../../policy/line-send-policy";
import { SendPolicyInput as SendPolicySchema, setLinePolicy } from "../../../services/lines/set-line-policy";
import { builder } from "../builder";
import { parseArgs } from "../inputs";
import { OWNER_ONLY, ownerAccount } from "../owner";

// A line's send policy (Line.sendPolicy, the `send_policy` of GET /v1/lines) and the owner's
// setLineSendPolicy: whether the line may message people first, its new-contact budgets, its
// quiet hours and its pace. The input is checked by the zod SendPolicyInput of the operator CLI
// and the dashboard, so a bad value is the same invalid_parameter_value naming the field.

const QuietHours = builder.objectRef<QuietHoursValue>("QuietHours").implement({
  description: "A daily window, in local time of an IANA zone, during which new messages wait. start after end crosses midnight.",
  fields: (t) => ({
    start: t.exposeString("start", { description: '"HH:MM", 24-hour.' }),
    end: t.exposeString("end", { description: '"HH:MM", 24-hour.' }),
    timezone: t.exposeString("timezone", { description: 'An IANA zone such as "America/New_York".' }),
  }),
});

export const SendPolicy = builder.objectRef<SendPolicyValue>("SendPolicy").implement({
  description: "When, and to whom, a line may send: what was set, and its service's defaults for the rest.",
  fields: (t) => ({
    contactFirst: t.boolean({
      description: "Sends only to contacts that messaged the line first (true unless the owner turned it off).",
      resolve: (p) => p.contact_first,
    }),
    newContactsPerHour: t.int({
      nullable: true,
      description: "Conversations with new contacts the line may open per sliding hour (iMessage lines: 10 unless set); null: no limit. Applies once contactFirst is off.",
      resolve: (p) => p.new_contacts_per_hour,
    }),
    newContactsPerDay: t.int({
      nullable: true,
      description: "The same per sliding 24 hours (iMessage lines: 50 unless set); null: no limit.",
      resolve: (p) => p.new_contacts_per_day,
    }),
    quietHours: t.field({ type: QuietHours, nullable: true, resolve: (p) => p.quiet_hours }),
    ratePerSecond: t.float({ description: "How many sends per second a provider line starts, at most.", resolve: (p) => p.rate_per_second }),
  }),
});

const QuietHoursInput = builder.inputType("QuietHoursInput", {
  fields: (t) => ({
    start: t.string({ required: true, description: '"HH:MM", 24-hour.' }),
    end: t.string({ required: true, description: '"HH:MM", 24-hour; must differ from start.' }),
    timezone: t.string({ required: true, description: 'An IANA zone such as "America/New_York".' }),
  }),
});

const SendPolicyInput = builder.inputType("SendPolicyInput", {
  description: "A change of a line's send policy: a field given replaces its value, a field left out keeps it; null clears a budget or the quiet hours.",
  fields: (t) => ({
    contactFirst: t.boolean(),
    newContactsPerHour: t.int({ description: "0 to 100000, or null for no limit." }),
    newContactsPerDay: t.int({ description: "0 to 100000, or null for no limit." }),
    quietHours: t.field({ type: QuietHoursInput, description: "null: no quiet hours." }),
    ratePerSecond: t.float({ description: "Above 0, at most 100." }),
  }),
});

builder.mutationFields((t) => ({
  setLineSendPolicy: t.prismaField({
    type: "Line",
    description: `Change a line's send policy (the operator CLI's \`line policy\`). Sends already held by the old policy are judged again by the new one. Answers the line, with its sendPolicy. ${OWNER_ONLY}`,
    args: {
      lineId: t.arg.string({ required: true, description: "ln_ ID of one of the account's lines (not the sandbox line)." }),
      policy: t.arg({ type: SendPolicyInput, required: true }),
    },
    resolve: async (query, _root, args, ctx) => {
      const accountId = ownerAccount(ctx.actor, "Setting a line's send policy", "API keys cannot change whom or when a line sends.");
      const { line_id } = parseArgs(LineIdBody, { lineId: args.lineId });
      // null is meaningful here (it clears a budget or the quiet hours): kept, unlike in other inputs.
      const change = parseArgs(SendPolicySchema, args.policy, { keepNull: true });
      const { line } = await setLinePolicy(accountId, line_id, change);
      return ctx.prisma.line.findUniqueOrThrow({ ...query, where: { id: line.id } });
    },
  }),
}));

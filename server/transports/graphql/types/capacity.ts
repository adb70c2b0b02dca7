import type { Window } from "../../../policy/new-contact-budget";
import { CapacityQuery, getCapacity, type LineCapacity as LineCapacityValue } from "../../../services/lines/capacity";
import { builder } from "../builder";
import { parseArgs, renamingParams } from "../inputs";
import { LineStatus, type LineStatusValue } from "./lines";

// GET /v1/capacity (lines:read): what a line, or each line of a pool the caller may use, can
// still send now, and what waits.

type Capacity = Awaited<ReturnType<typeof getCapacity>>;

const BudgetWindow = builder.objectRef<Window>("BudgetWindow").implement({
  description: "One new-contact budget window (sliding): conversations opened in it, and what is left.",
  fields: (t) => ({
    used: t.exposeInt("used"),
    limit: t.exposeInt("limit", { nullable: true, description: "null: no limit." }),
    remaining: t.exposeInt("remaining", { nullable: true, description: "null: no limit." }),
    resetsAt: t.field({
      type: "Timestamp",
      nullable: true,
      description: "When the oldest opening in the window ages out (a slot frees), if any is in it.",
      resolve: (w) => w.resets_at,
    }),
  }),
});

const NewContactBudgets = builder.objectRef<LineCapacityValue["new_contacts"]>("NewContactBudgets").implement({
  fields: (t) => ({
    hour: t.field({ type: BudgetWindow, resolve: (b) => b.hour }),
    day: t.field({ type: BudgetWindow, resolve: (b) => b.day }),
  }),
});

const QuietHoursState = builder.objectRef<LineCapacityValue["quiet_hours"]>("QuietHoursState").implement({
  fields: (t) => ({
    active: t.exposeBoolean("active", { description: "Whether the line is inside its quiet hours now." }),
    until: t.field({ type: "Timestamp", nullable: true, description: "When active: when the quiet hours end.", resolve: (q) => q.until }),
  }),
});

const QueuedSends = builder.objectRef<LineCapacityValue["queued"]>("QueuedSends").implement({
  description: "Pending sends of the line that wait, by holdReason.",
  fields: (t) => ({
    scheduled: t.exposeInt("scheduled"),
    quietHours: t.exposeInt("quiet_hours"),
    newContactBudget: t.exposeInt("new_contact_budget"),
    lineRate: t.exposeInt("line_rate", { description: "Due sends waiting their turn on a paced provider line." }),
    lineUnavailable: t.exposeInt("line_unavailable", { description: "Due sends waiting for a disconnected line's provider." }),
  }),
});

const LineCapacity = builder.objectRef<LineCapacityValue>("LineCapacity").implement({
  fields: (t) => ({
    lineId: t.exposeString("line_id"),
    handle: t.exposeString("handle"),
    status: t.field({ type: LineStatus, resolve: (c) => c.status as LineStatusValue }),
    newContacts: t.field({ type: NewContactBudgets, resolve: (c) => c.new_contacts }),
    quietHours: t.field({ type: QuietHoursState, resolve: (c) => c.quiet_hours }),
    queued: t.field({ type: QueuedSends, resolve: (c) => c.queued }),
    nextSlotAt: t.field({
      type: "Timestamp",
      nullable: true,
      description: "When a send to a new contact could go out (now when there is room); null when a budget is 0.",
      resolve: (c) => c.next_slot_at,
    }),
  }),
});

const CapacityRef = builder.objectRef<Capacity>("Capacity").implement({
  fields: (t) => ({
    from: t.exposeString("from", { description: "The line or pool asked about, as given." }),
    poolId: t.exposeString("pool_id", { nullable: true }),
    lines: t.field({ type: [LineCapacity], description: "The line, or each active line of the pool the caller may use.", resolve: (c) => c.lines }),
  }),
});

builder.queryFields((t) => ({
  capacity: t.field({
    type: CapacityRef,
    description: "GET /v1/capacity: what a line (handle or ln_ ID), or each line of a pool (pool_ ID), can still send, and what waits.",
    authScopes: { scope: "lines:read" },
    args: { from: t.arg.string({ required: true }) },
    // A pool's errors name its `id`: here that is `from`.
    resolve: (_root, args, ctx) => renamingParams({ id: "from" }, () => getCapacity(ctx.actor, parseArgs(CapacityQuery, args))),
  }),
}));

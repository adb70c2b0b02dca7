import { activateSandbox, getSandbox } from "../../../services/lines/sandbox";
import { builder } from "../builder";

// The sandbox (GET and POST /v1/sandbox), for every key of an account with an owner.

type SandboxState = Awaited<ReturnType<typeof getSandbox>>;

const SandboxStatus = builder.enumType("SandboxStatus", { values: ["missing", "pending", "active"] as const });

const SandboxUsage = builder.objectRef<SandboxState["usage"]>("SandboxUsage").implement({
  description: "Messages sent on the sandbox line today (UTC).",
  fields: (t) => ({
    used: t.exposeInt("used"),
    limit: t.exposeInt("limit"),
    remaining: t.exposeInt("remaining"),
    resetsAt: t.field({ type: "Timestamp", resolve: (u) => u.resets_at }),
  }),
});

const Sandbox = builder.objectRef<SandboxState>("Sandbox").implement({
  fields: (t) => ({
    status: t.field({ type: SandboxStatus, resolve: (s) => s.status }),
    activationCode: t.string({ nullable: true, description: "Text it to the sandbox line from the phone to pair.", resolve: (s) => s.activation_code }),
    sandboxLineHandle: t.string({ resolve: (s) => s.sandbox_line_handle }),
    contactIdentifier: t.string({ nullable: true, description: "The paired phone.", resolve: (s) => s.contact_identifier }),
    activatedAt: t.field({ type: "Timestamp", nullable: true, resolve: (s) => s.activated_at }),
    usage: t.field({ type: SandboxUsage, resolve: (s) => s.usage }),
  }),
});

builder.queryFields((t) => ({
  sandbox: t.field({ type: Sandbox, description: "The caller's sandbox state.", resolve: (_root, _args, ctx) => getSandbox(ctx.actor) }),
}));

builder.mutationFields((t) => ({
  activateSandbox: t.field({
    type: Sandbox,
    description: "Start sandbox activation: issues the code to text (idempotent while pending or active).",
    resolve: (_root, _args, ctx) => activateSandbox(ctx.actor),
  }),
}));

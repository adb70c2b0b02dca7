import type { Guardrails } from "../../../policy/key-guardrails";
import { listApiKeys, SetGuardrailsBody, setApiKeyGuardrails } from "../../../services/accounts/api-keys";
import type { Actor } from "../../../services/access/actor";
import type { serializeApiKey } from "../../../wire/serializers";
import { builder } from "../builder";
import { parseArgs, restShape } from "../inputs";
import { OWNER_ONLY, ownerAccount } from "../owner";

// The account's API keys and their guardrails (docs/agents.md), as the dashboard shows them:
// the owner's alone (../owner.ts). A key handed to an agent must not learn its own limits, nor
// any other key's, so every entry point refuses API keys. The secret is never a field.

type ApiKeyView = ReturnType<typeof serializeApiKey>;

const ownerOf = (actor: Actor) =>
  ownerAccount(actor, "Managing API keys", "An API key cannot read or change its own guardrails or another key's.");

const ApiKeyStatus = builder.enumType("ApiKeyStatus", { values: ["active", "revoked", "expired"] as const });

const ApiKeyGuardrails = builder.objectRef<Guardrails>("ApiKeyGuardrails").implement({
  description: "Limits of a key handed to an automated sender. A key with any of them never holds the outbox:approve scope.",
  fields: (t) => ({
    allowTo: t.stringList({
      nullable: true,
      description: "Normalized contacts (E.164 numbers, emails, handles) and cht_ chat IDs the key may send to; null: anyone the line may reach.",
      resolve: (g) => g.allow_to,
    }),
    requireApproval: t.boolean({
      description: "Every send by the key waits (holdReason approval) until the owner approves or rejects it.",
      resolve: (g) => g.require_approval,
    }),
    maxSendsPerChatWithoutReply: t.int({
      nullable: true,
      description: "Sends to one chat since its contact last wrote, at most (reply_required beyond); null: no limit.",
      resolve: (g) => g.max_sends_per_chat_without_reply,
    }),
    maxSendsPerDay: t.int({
      nullable: true,
      description: "Sends in any 24 hours, at most (key_send_limit_exceeded beyond); null: no limit.",
      resolve: (g) => g.max_sends_per_day,
    }),
  }),
});

const ApiKey = builder.objectRef<ApiKeyView>("ApiKey").implement({
  description: `An API key of the account, as its owner sees it (never the secret). ${OWNER_ONLY}`,
  fields: (t) => ({
    id: t.exposeID("id"),
    name: t.exposeString("name"),
    prefix: t.exposeString("prefix", { description: "The visible start of the secret." }),
    scopes: t.exposeStringList("scopes"),
    lineIds: t.stringList({ nullable: true, description: "The lines the key is restricted to; null: every line of the account.", resolve: (k) => k.line_ids }),
    status: t.field({ type: ApiKeyStatus, resolve: (k) => k.status }),
    guardrails: t.field({ type: ApiKeyGuardrails, description: "Every field, set or not.", resolve: (k) => k.guardrails }),
    expiresAt: t.field({ type: "Timestamp", nullable: true, resolve: (k) => k.expires_at }),
    revokedAt: t.field({ type: "Timestamp", nullable: true, resolve: (k) => k.revoked_at }),
    lastUsedAt: t.field({ type: "Timestamp", nullable: true, description: "Updated at most about once a minute.", resolve: (k) => k.last_used_at }),
    createdAt: t.field({ type: "Timestamp", resolve: (k) => k.created_at }),
  }),
});

const ApiKeyGuardrailsInput = builder.inputType("ApiKeyGuardrailsInput", {
  description: "A change of a key's guardrails: a field given replaces its value, a field left out keeps it; null clears it.",
  fields: (t) => ({
    allowTo: t.stringList({ description: "Contacts (phone numbers, emails, handles) and cht_ chat IDs, 1 to 1000; null: no restriction." }),
    requireApproval: t.boolean(),
    maxSendsPerChatWithoutReply: t.int({ description: "1 to 1000000, or null for no limit." }),
    maxSendsPerDay: t.int({ description: "1 to 1000000, or null for no limit." }),
  }),
});

builder.queryFields((t) => ({
  apiKeys: t.field({
    type: [ApiKey],
    description: `The account's API keys, newest first, revoked and expired ones included. ${OWNER_ONLY}`,
    resolve: (_root, _args, ctx) => {
      ownerOf(ctx.actor);
      return listApiKeys(ctx.actor);
    },
  }),
}));

builder.mutationFields((t) => ({
  setApiKeyGuardrails: t.field({
    type: ApiKey,
    description: `Change a key's guardrails; every instance applies them within API_KEY_CACHE_SECONDS. A key holding outbox:approve cannot be given any (invalid_parameter_value naming scopes). ${OWNER_ONLY}`,
    args: {
      id: t.arg.string({ required: true, description: "key_ ID." }),
      guardrails: t.arg({ type: ApiKeyGuardrailsInput, required: true }),
    },
    resolve: (_root, args, ctx) => {
      ownerOf(ctx.actor);
      // null is meaningful here (it clears a guardrail): kept, unlike in other inputs.
      const input = parseArgs(SetGuardrailsBody, { id: args.id, guardrails: restShape(args.guardrails, { keepNull: true }) });
      return setApiKeyGuardrails(ctx.actor, input);
    },
  }),
}));

// Operator CLI commands of API keys (docs/operator-cli.md; admin.ts has the rest).
import { parseArgs } from "node:util";
import type { Guardrails } from "../server/policy/key-guardrails";
import type { Actor } from "../server/services/access/actor";
import { UsageError } from "./admin-send-policy";

export const KEY_USAGE = `  admin key create --account E --name N [--scopes all|s1,s2] [--lines H1,H2] [--rate-limit N] [--expires-at UNIX_MS]
                   [--allow-to CONTACT_OR_CHAT,...] [--require-approval] [--max-sends-per-chat-without-reply N] [--max-sends-per-day N]
      the last four are guardrails for a key handed to an agent (docs/agents.md); a guarded key never holds
      outbox:approve, so --scopes all leaves it out
  admin key guard --key sk_live_...|key_... --json '{"allow_to":["+15551230001"],"require_approval":true,...}'
      fields: allow_to, require_approval, max_sends_per_chat_without_reply, max_sends_per_day; those left out
      keep their value, null clears one; prints the key's guardrails (JSON)
  admin key list [--account E] [--json]
  admin key revoke --key sk_live_...|key_...
      revokes at once: every instance refuses the key within its key cache window`;

export const isKeyCommand = (argv: string[]): boolean => argv[0] === "key";

function need(values: Record<string, unknown>, name: string): string {
  const v = values[name];
  if (typeof v !== "string" || v === "") throw new UsageError(`--${name} is required`);
  return v;
}

function positiveInt(value: string, name: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new UsageError(`--${name} must be a positive integer`);
  return Number(value);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new UsageError(`--json must be a JSON object, e.g. '{"allow_to":["+15551230001"],"max_sends_per_day":50}'`);
  }
}

function guardrailFlags(values: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const allowTo = values["allow-to"];
  if (typeof allowTo === "string") {
    const entries = allowTo.split(",").map((s) => s.trim()).filter(Boolean);
    if (!entries.length) throw new UsageError("--allow-to needs at least one contact or cht_ chat ID");
    out.allow_to = entries;
  }
  if (values["require-approval"]) out.require_approval = true;
  for (const flag of ["max-sends-per-chat-without-reply", "max-sends-per-day"]) {
    const value = values[flag];
    if (typeof value === "string") out[flag.replaceAll("-", "_")] = positiveInt(value, flag);
  }
  return out;
}

function guardrailsText(g: Guardrails): string {
  const parts = [
    g.allow_to ? `allow_to=${g.allow_to.join(",")}` : "",
    g.require_approval ? "require_approval" : "",
    g.max_sends_per_chat_without_reply !== null ? `max_sends_per_chat_without_reply=${g.max_sends_per_chat_without_reply}` : "",
    g.max_sends_per_day !== null ? `max_sends_per_day=${g.max_sends_per_day}` : "",
  ].filter(Boolean);
  return parts.length ? parts.join(" ") : "unguarded";
}

export async function runKeyCommand(argv: string[]): Promise<void> {
  // `key guard --json` takes the change; `key list --json` is the output format.
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      account: { type: "string" },
      name: { type: "string" },
      scopes: { type: "string" },
      lines: { type: "string" },
      "rate-limit": { type: "string" },
      "expires-at": { type: "string" },
      "allow-to": { type: "string" },
      "require-approval": { type: "boolean" },
      "max-sends-per-chat-without-reply": { type: "string" },
      "max-sends-per-day": { type: "string" },
      key: { type: "string" },
      json: { type: argv[1] === "guard" ? "string" : "boolean" },
    },
  });
  const command = positionals.join(" ");
  const { getDb } = await import("../server/db");
  const { findAccountByEmail } = await import("../server/services/accounts/accounts");
  const { createApiKey, hashKey } = await import("../server/services/access/api-keys");
  const { GuardrailsInput } = await import("../server/policy/key-guardrails");
  const print = (value: unknown) => console.log(JSON.stringify(value, null, 2));
  /** The operator acts as the key's account owner, who may change any of its keys. */
  const keyOf = async (ref: string) => {
    const trimmed = ref.trim();
    const key = await (await getDb()).apiKey.findUnique({ where: trimmed.startsWith("sk_live_") ? { hash: hashKey(trimmed) } : { id: trimmed } });
    if (!key) throw new UsageError("no such key (give its secret, sk_live_..., or its ID, key_..., from key list)");
    const owner: Actor = { accountId: key.accountId, keyId: null, scopes: new Set(), lineIds: null, rateLimitPerHour: 0, hasOwner: true, guardrails: null };
    return { key, owner };
  };
  switch (command) {
    case "key create": {
      const { parseScopes } = await import("../server/services/access/scopes");
      const { APPROVE_SCOPE } = await import("../server/services/access/approval-scope");
      const { normalizeHandle } = await import("../server/kernel/handles");
      const account = await findAccountByEmail(need(values, "account"));
      const guardrails = GuardrailsInput.parse(guardrailFlags(values));
      const guarded = Object.keys(guardrails).length > 0;
      const all = (values.scopes ?? "all").trim() === "all";
      // "all" for an agent's key means every scope it can hold: a guarded key never approves.
      const scopes = parseScopes(values.scopes ?? "all").filter((s) => !(all && guarded && s === APPROVE_SCOPE));
      let lineIds: string[] | null = null;
      if (values.lines !== undefined) {
        const handles = values.lines.split(",").map((h) => normalizeHandle(h)).filter(Boolean);
        if (!handles.length) throw new UsageError("--lines needs at least one line handle");
        const db = await getDb();
        const lines = await db.line.findMany({ where: { accountId: account.id, handle: { in: handles } } });
        const missing = handles.filter((h) => !lines.some((l) => l.handle === h));
        if (missing.length) throw new UsageError(`no line ${missing.join(", ")} in account ${account.email}`);
        lineIds = lines.map((l) => l.id);
      }
      const expiresAt = values["expires-at"];
      if (expiresAt !== undefined && !/^\d+$/.test(expiresAt)) throw new UsageError("--expires-at must be Unix milliseconds");
      const { secret } = await createApiKey({
        accountId: account.id,
        name: need(values, "name"),
        scopes,
        lineIds,
        rateLimitPerHour: values["rate-limit"] !== undefined ? positiveInt(values["rate-limit"], "rate-limit") : null,
        expiresAt: expiresAt !== undefined ? new Date(Number(expiresAt)) : null,
        ...(guarded ? { guardrails } : {}),
      });
      console.log(secret);
      return;
    }
    case "key guard": {
      const { setApiKeyGuardrails } = await import("../server/services/accounts/api-keys");
      const { APPROVE_SCOPE } = await import("../server/services/access/approval-scope");
      if (typeof values.json !== "string") throw new UsageError("--json is required: the guardrails to change");
      const change = GuardrailsInput.parse(parseJson(values.json));
      const { key, owner } = await keyOf(need(values, "key"));
      const updated = await setApiKeyGuardrails(owner, { id: key.id, guardrails: change }).catch((err: unknown) => {
        if ((err as { param?: string }).param !== "scopes") throw err;
        throw new Error(
          `${(err as Error).message} Give the agent a new key instead: admin key create with a guardrail flag (--scopes all then leaves ${APPROVE_SCOPE} out), and revoke this one.`,
        );
      });
      print(updated.guardrails);
      return;
    }
    case "key list": {
      const { serializeApiKey } = await import("../server/wire/serializers");
      const accountId = values.account ? (await findAccountByEmail(values.account)).id : undefined;
      const db = await getDb();
      const keys = (await db.apiKey.findMany({ where: accountId ? { accountId } : {}, orderBy: { id: "desc" } })).map((k) => ({ account_id: k.accountId, ...serializeApiKey(k) }));
      if (values.json) return print(keys);
      console.log(["ID", "NAME", "PREFIX", "STATUS", "SCOPES", "GUARDRAILS"].join("\t"));
      for (const k of keys) console.log([k.id, k.name, k.prefix, k.status, k.scopes.join(","), guardrailsText(k.guardrails)].join("\t"));
      return;
    }
    case "key revoke": {
      const { revokeAccountApiKey } = await import("../server/services/accounts/api-keys");
      const { key, owner } = await keyOf(need(values, "key"));
      const revoked = await revokeAccountApiKey(owner, { id: key.id });
      console.error(`revoked ${revoked.id} (${revoked.name})`);
      return;
    }
    default:
      throw new UsageError(`unknown command '${command}'`);
  }
}

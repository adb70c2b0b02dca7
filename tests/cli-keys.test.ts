import { describe, expect, it } from "vitest";
import { admin, USING, useAdminServer } from "./admin-cli";

useAdminServer();

// The API-key commands for keys handed to agents (docs/agents.md): guardrails at creation,
// `key guard` to change them, `key list` to show them.
interface ListedKey {
  id: string;
  name: string;
  scopes: string[];
  status: string;
  guardrails: { allow_to: string[] | null; require_approval: boolean; max_sends_per_chat_without_reply: number | null; max_sends_per_day: number | null };
}

async function listed(email: string): Promise<ListedKey[]> {
  const res = await admin("key", "list", "--account", email, "--json");
  expect(res.code, res.stderr).toBe(0);
  return JSON.parse(res.stdout);
}

const UNGUARDED = { allow_to: null, require_approval: false, max_sends_per_chat_without_reply: null, max_sends_per_day: null };

// Each CLI call is a fresh process (tsx, database connection): allow for a busy machine.
describe("admin key guardrails", { timeout: 240_000 }, () => {
  it("creates a guarded key (--scopes all leaves outbox:approve out), changes its guardrails with key guard, lists them, and revokes by ID", async () => {
    const email = `agents-${Date.now()}@example.com`;
    expect((await admin("account", "create", "--email", email)).code).toBe(0);
    const created = await admin(
      "key", "create", "--account", email, "--name", "agent", "--scopes", "all",
      "--allow-to", "+1 (555) 123-0001, cht_abc", "--require-approval", "--max-sends-per-day", "50",
    );
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toMatch(/^sk_live_[A-Za-z0-9_-]+\n$/);
    const secret = created.stdout.trim();
    const plain = await admin("key", "create", "--account", email, "--name", "owner");
    expect(plain.code, plain.stderr).toBe(0);

    const [owner, agent] = await listed(email);
    expect(owner).toMatchObject({ name: "owner", guardrails: UNGUARDED });
    expect(owner!.scopes).toContain("outbox:approve");
    expect(agent).toMatchObject({
      name: "agent",
      status: "active",
      guardrails: { allow_to: ["+15551230001", "cht_abc"], require_approval: true, max_sends_per_chat_without_reply: null, max_sends_per_day: 50 },
    });
    expect(agent!.scopes).not.toContain("outbox:approve");
    expect(agent!.scopes).toHaveLength(owner!.scopes.length - 1);
    const table = await admin("key", "list", "--account", email);
    expect(table.stdout).toContain(`${agent!.id}\tagent\t`);
    expect(table.stdout).toMatch(/\tallow_to=\+15551230001,cht_abc require_approval max_sends_per_day=50$/m);
    expect(table.stdout).toMatch(new RegExp(`^${owner!.id}\towner\t.*\tunguarded$`, "m"));

    // By secret: fields left out keep their value, null clears one.
    const guard = await admin("key", "guard", "--key", secret, "--json", '{"allow_to":null,"max_sends_per_chat_without_reply":2}');
    expect(guard.code, guard.stderr).toBe(0);
    expect(JSON.parse(guard.stdout)).toEqual({ allow_to: null, require_approval: true, max_sends_per_chat_without_reply: 2, max_sends_per_day: 50 });
    // By ID, as key list shows it.
    const byId = await admin("key", "guard", "--key", agent!.id, "--json", '{"require_approval":false,"allow_to":["+15551230002"]}');
    expect(byId.code, byId.stderr).toBe(0);
    expect(JSON.parse(byId.stdout)).toEqual({ allow_to: ["+15551230002"], require_approval: false, max_sends_per_chat_without_reply: 2, max_sends_per_day: 50 });
    expect((await listed(email))[1]!.guardrails).toEqual(JSON.parse(byId.stdout));

    // Revoked by ID, as key list shows it: the other key stays.
    const revoked = await admin("key", "revoke", "--key", agent!.id);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(revoked.stderr).toMatch(new RegExp(`${USING.source}revoked ${agent!.id} \\(agent\\)\\n$`));
    expect((await listed(email)).map((k) => [k.name, k.status])).toEqual([["owner", "active"], ["agent", "revoked"]]);
  });

  it("refuses bad JSON, bad values, an unknown key and outbox:approve on a guarded key, with a message and a non-zero exit", async () => {
    const email = `agents-bad-${Date.now()}@example.com`;
    expect((await admin("account", "create", "--email", email)).code).toBe(0);
    const unguarded = (await admin("key", "create", "--account", email, "--name", "full")).stdout.trim();
    const guarded = (await admin("key", "create", "--account", email, "--name", "agent", "--max-sends-per-day", "5")).stdout.trim();
    expect(guarded).toMatch(/^sk_live_/);
    const cases: [string[], RegExp][] = [
      [["key", "guard", "--key", guarded, "--json", "{allow_to:"], /--json must be a JSON object/],
      [["key", "guard", "--key", guarded, "--json", '{"max_sends_per_day":0,"allow_to":[]}'], /allow_to: list at least one.*; max_sends_per_day: must be at least 1/],
      [["key", "guard", "--key", guarded, "--json", '{"require_approval":"yes"}'], /require_approval: /],
      [["key", "guard", "--key", guarded, "--json", '{"max_sends":3}'], /max_sends/],
      [["key", "guard", "--key", guarded], /--json is required/],
      [["key", "guard", "--key", "sk_live_doesnotexistdoesnotexist", "--json", "{}"], /no such key/],
      [["key", "guard", "--key", unguarded, "--json", '{"require_approval":true}'], /cannot hold the 'outbox:approve' scope.*admin key create/],
      [["key", "create", "--account", email, "--name", "x", "--max-sends-per-day", "0"], /--max-sends-per-day must be a positive integer/],
      [["key", "create", "--account", email, "--name", "x", "--max-sends-per-chat-without-reply", "two"], /--max-sends-per-chat-without-reply must be a positive integer/],
      [["key", "create", "--account", email, "--name", "x", "--allow-to", " , "], /--allow-to needs at least one/],
      [["key", "create", "--account", email, "--name", "x", "--scopes", "messages:write,outbox:approve", "--require-approval"], /cannot hold the 'outbox:approve' scope/],
    ];
    for (let i = 0; i < cases.length; i += 3) {
      const batch = cases.slice(i, i + 3);
      const results = await Promise.all(batch.map(([args]) => admin(...args)));
      results.forEach((res, j) => {
        const [args, message] = batch[j]!;
        expect(res.code, args.join(" ")).not.toBe(0);
        expect(res.stdout, args.join(" ")).toBe("");
        expect(res.stderr, args.join(" ")).toMatch(message);
      });
    }
    // Nothing changed and nothing was created by the refusals.
    const keys = await listed(email);
    expect(keys.map((k) => k.name).sort()).toEqual(["agent", "full"]);
    expect(keys.find((k) => k.name === "agent")!.guardrails).toEqual({ ...UNGUARDED, max_sends_per_day: 5 });
    expect(keys.find((k) => k.name === "full")!.guardrails).toEqual(UNGUARDED);
  });
});

import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// The operator CLI's API-key commands for keys handed to agents (docs/agents.md): guardrails
// at creation, `key guard` to change them, `key list` to show them. As in tests/cli.test.ts,
// the CLI is a separate process; on PGlite it reaches a server process's database through its
// Unix socket, on PostgreSQL it shares this file's schema.

const onPostgres = !!process.env.DATABASE_URL;
const TSX = path.resolve("node_modules/.bin/tsx");
let dataDir = "";
let server: ChildProcess | undefined;

function env(): NodeJS.ProcessEnv {
  const e: NodeJS.ProcessEnv = { ...process.env, NODE_ENV: "production" };
  if (!onPostgres) e.DATA_DIR = dataDir;
  else e.CREDENTIALS_KEY = "cli-test-credentials-key-0123456789abcdef";
  return e;
}

function admin(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(TSX, ["scripts/admin.ts", ...args], { env: env(), timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

beforeAll(async () => {
  if (onPostgres) return;
  dataDir = mkdtempSync(path.join(tmpdir(), "relay-admin-keys-"));
  server = spawn(TSX, ["-e", "import('./server/boot/bootstrap.ts').then((m) => m.bootstrap()).then(() => console.log('ready'))"], {
    env: env(),
    stdio: ["ignore", "pipe", "inherit"],
  });
  await new Promise<void>((resolve, reject) => {
    server!.stdout!.on("data", (d: Buffer) => d.toString().includes("ready") && resolve());
    server!.once("exit", (code) => reject(new Error(`server exited with ${code}`)));
  });
}, 60_000);

afterAll(() => {
  server?.kill();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

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
  it("creates a guarded key (--scopes all leaves outbox:approve out), changes its guardrails with key guard, and lists them", async () => {
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

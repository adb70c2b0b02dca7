import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { describe, expect, it, vi } from "vitest";
import { startFakeBlueBubbles } from "./fakes/bluebubbles";
import { get } from "./helpers";
import { admin, adminWithStdin, env, onPostgres, serverDataDir, USING, useAdminServer } from "./admin-cli";

// The operator CLI's commands as an operator runs them (tests/admin-cli.ts): accounts, lines,
// keys, pools and send policy; the embedded database's socket it reaches the server through.

useAdminServer();

async function keyRowsThroughServerSocket(): Promise<{ name: string; scopes: string[]; rateLimitPerHour: number | null }[]> {
  const info = JSON.parse(readFileSync(path.join(serverDataDir(), "server.json"), "utf8"));
  const client = new pg.Client({ host: info.pgliteSocket.host, port: info.pgliteSocket.port, user: "postgres", database: "postgres" });
  await client.connect();
  const { rows } = await client.query(`SELECT name, scopes, "rateLimitPerHour" FROM "ApiKey" ORDER BY "createdAt"`);
  await client.end();
  return rows;
}

/** Inodes of the TCP sockets a process listens on (Linux /proc). */
function tcpListenInodes(pid: number): string[] {
  const own = new Set(
    readdirSync(`/proc/${pid}/fd`)
      .map((fd) => {
        try {
          return readlinkSync(`/proc/${pid}/fd/${fd}`);
        } catch {
          return "";
        }
      })
      .map((target) => /^socket:\[(\d+)\]$/.exec(target)?.[1])
      .filter((inode): inode is string => !!inode),
  );
  const listening = ["/proc/net/tcp", "/proc/net/tcp6"].flatMap((file) =>
    readFileSync(file, "utf8")
      .trim()
      .split("\n")
      .slice(1)
      .map((row) => row.trim().split(/\s+/))
      .filter((cols) => cols[3] === "0A") // LISTEN
      .map((cols) => cols[9]!),
  );
  return listening.filter((inode) => own.has(inode));
}

describe.skipIf(onPostgres)("the embedded database's socket", () => {
  it("is a Unix socket in DATA_DIR only the server's OS user can open (0600 in a 0700 directory), and no TCP port", () => {
    const info = JSON.parse(readFileSync(path.join(serverDataDir(), "server.json"), "utf8"));
    expect(info.pgliteSocket.host).toBe(path.join(serverDataDir(), "run"));
    expect(statSync(info.pgliteSocket.host).mode & 0o777).toBe(0o700);
    const sockets = readdirSync(info.pgliteSocket.host);
    expect(sockets).toContain(`.s.PGSQL.${info.pgliteSocket.port}`);
    for (const name of sockets) {
      const stat = statSync(path.join(info.pgliteSocket.host, name));
      expect(stat.isSocket(), name).toBe(true);
      expect(stat.mode & 0o777, name).toBe(0o600);
    }
    if (process.platform === "linux") expect(tcpListenInodes(info.pid)).toEqual([]);
  });
});

// Each CLI call is a fresh process (tsx, database connection): allow for a busy machine.
describe("operator CLI", { timeout: 180_000 }, () => {
  it("creates an account, a line and keys; prints only the key; revokes", async () => {
    const email = `ops-${Date.now()}@example.com`;
    const account = await admin("account", "create", "--email", email, "--password", "correct horse battery");
    // One line on stderr: the database written to.
    expect(account.stderr).toMatch(new RegExp(`${USING.source}$`));
    if (onPostgres) expect(account.stderr).toContain(`(schema ${process.env.DATABASE_SCHEMA})`);
    else expect(account.stderr).toContain(` in ${serverDataDir()} (`);
    expect(account.code).toBe(0);
    expect(account.stdout.trim()).toMatch(/^acct_[0-9a-z]{26}$/);

    const line = await admin("line", "create", "--account", email, "--handle", "+1 555 777 0001", "--label", "Support", "--advanced");
    expect(line.code).toBe(0);
    expect(line.stdout.trim()).toMatch(/^ln_/);

    const key = await admin("key", "create", "--account", email, "--name", "ci", "--scopes", "lines:read,chats:read", "--lines", "+15557770001", "--rate-limit", "100");
    expect(key.code).toBe(0);
    expect(key.stdout).toMatch(/^sk_live_[A-Za-z0-9_-]+\n$/);
    const secret = key.stdout.trim();

    if (onPostgres) {
      const lines = await get("/v1/lines", secret);
      expect(lines.status).toBe(200);
      expect(lines.headers.get("x-ratelimit-limit")).toBe("100");
      expect(lines.body.data.map((l: { handle: string }) => l.handle)).toContain("+15557770001");
      expect((await get("/v1/messages?from=%2B15557770001", secret)).body.error.code).toBe("insufficient_scope");
    } else {
      const rows = await keyRowsThroughServerSocket();
      expect(rows.at(-1)).toEqual({ name: "ci", scopes: ["lines:read", "chats:read"], rateLimitPerHour: 100 });
    }

    const revoke = await admin("key", "revoke", "--key", secret);
    expect(revoke.code).toBe(0);
    if (onPostgres) {
      // Revoked in another process: this instance's key cache honours it within API_KEY_CACHE_SECONDS.
      const started = Date.now();
      await vi.waitFor(async () => expect((await get("/v1/lines", secret)).status).toBe(401), { timeout: 7000, interval: 250 });
      expect(Date.now() - started).toBeLessThan(6500);
    }
  });

  it("sets and shows a line's send policy, naming a bad field; manages pools", async () => {
    const email = `policy-${Date.now()}@example.com`;
    expect((await admin("account", "create", "--email", email)).code).toBe(0);
    const handles = [`+1555${Date.now() % 10_000_000}`.padEnd(12, "1"), `+1556${Date.now() % 10_000_000}`.padEnd(12, "2")];
    const [a, b] = await Promise.all(handles.map(async (h) => (await admin("line", "create", "--account", email, "--handle", h)).stdout.trim()));
    expect(a).toMatch(/^ln_/);
    const shown = await admin("line", "policy", "--line", a!, "--show");
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout)).toEqual({ contact_first: true, new_contacts_per_hour: 10, new_contacts_per_day: 50, quiet_hours: null, rate_per_second: 1 });
    const bad = await admin("line", "policy", "--line", a!, "--json", '{"quiet_hours":{"start":"21:00","end":"08:00","timezone":"Mars/Olympus"},"new_contacts_per_day":-1}');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("quiet_hours.timezone: must be an IANA time zone");
    expect(bad.stderr).toContain("new_contacts_per_day: must not be negative");
    const quiet = { start: "21:00", end: "08:00", timezone: "America/New_York" };
    const set = await admin("line", "policy", "--line", handles[0]!, "--json", JSON.stringify({ quiet_hours: quiet, new_contacts_per_hour: null }));
    expect(set.code).toBe(0);
    expect(JSON.parse(set.stdout)).toMatchObject({ quiet_hours: quiet, new_contacts_per_hour: null, new_contacts_per_day: 50 });
    const pool = await admin("pool", "create", "--account", email, "--name", "support", "--lines", `${a},${handles[1]}`);
    expect(pool.code).toBe(0);
    const created = JSON.parse(pool.stdout) as { id: string; line_ids: string[] };
    expect(created).toMatchObject({ object: "pool", id: expect.stringMatching(/^pool_/), name: "support", line_ids: [a, b] });
    const removed = await admin("pool", "remove-line", "--pool", created.id, "--line", b!);
    expect(JSON.parse(removed.stdout).line_ids).toEqual([a]);
    const list = await admin("pool", "list", "--account", email, "--json");
    expect(JSON.parse(list.stdout)).toEqual([expect.objectContaining({ id: created.id, name: "support", line_ids: [a] })]);
  });

  it("reports bad input on stderr with a non-zero exit", async () => {
    const cases: [string[], RegExp][] = [
      [["account", "create"], /--email is required/],
      [["account", "create", "--email", "not-an-email"], /email/],
      [["key", "create", "--account", "nobody@example.com", "--name", "x"], /No account/],
      [["key", "revoke", "--key", "sk_live_doesnotexistdoesnotexist"], /no such key/],
      [["frobnicate"], /unknown command/],
    ];
    for (let i = 0; i < cases.length; i += 2) {
      const pair = cases.slice(i, i + 2);
      const results = await Promise.all(pair.map(([args]) => admin(...args)));
      results.forEach((res, j) => {
        const [args, message] = pair[j]!;
        expect(res.code, args.join(" ")).not.toBe(0);
        expect(res.stdout).toBe("");
        expect(res.stderr).toMatch(message);
      });
    }
    const email = `dup-${Date.now()}@example.com`;
    expect((await admin("account", "create", "--email", email, "--no-owner")).code).toBe(0);
    const dup = await admin("account", "create", "--email", email);
    expect(dup.code).not.toBe(0);
    expect(dup.stderr).toMatch(/already exists/);
    const badScope = await admin("key", "create", "--account", email, "--name", "x", "--scopes", "lines:read,fly");
    expect(badScope.stderr).toMatch(/unknown scope\(s\): fly/);
  });

  it("connects a line to BlueBubbles, tests and lists it, and switches it back to simulated; never prints the password", async () => {
    const bb = await startFakeBlueBubbles({ password: "cli-secret-pw" });
    try {
      const email = `bb-${Date.now()}@example.com`;
      expect((await admin("account", "create", "--email", email)).code).toBe(0);
      const config = JSON.stringify({ url: bb.url, password: "cli-secret-pw", sendTimeoutSeconds: 90 });
      const created = await admin("line", "create", "--account", email, "--handle", "+1 555 777 0002", "--provider", "bluebubbles", "--provider-config", config, "--rate", "2");
      expect(created.code, created.stderr).toBe(0);
      const id = created.stdout.trim();
      expect(id).toMatch(/^ln_[0-9a-z]+$/);
      expect(created.stderr).toMatch(USING);
      expect(created.stderr).not.toMatch(/Could not register|Catch-up failed|did not answer/);
      // The CLI does not know the running server's address: the server registers the webhook itself.
      expect(bb.webhooks).toHaveLength(0);
      expect(created.stderr).toMatch(/running server registers this line's webhooks/);

      const tested = await admin("line", "test", "--line", id);
      expect(tested.code).toBe(0);
      expect(tested.stdout).toMatch(/on bluebubbles: connected/);
      expect(tested.stdout).toMatch(/probe: ok/);
      expect(tested.stdout).toMatch(/private_api: true/);
      expect(tested.stdout).toMatch(/advanced features: yes/);

      const listed = await admin("line", "list", "--account", email);
      expect(listed.stdout.split("\n")[0]).toBe("ID\tHANDLE\tPROVIDER\tSTATUS\tFEATURES\tSETTINGS");
      expect(listed.stderr).toBe(""); // a read: no "using" line
      expect(listed.stdout).toMatch(new RegExp(`^${id}\t\\+15557770002\tbluebubbles\tconnected\tadvanced\turl=${bb.url.replace(/[.:/]/g, "\\$&")} sendTimeoutSeconds=90$`, "m"));
      const json = JSON.parse((await admin("line", "list", "--account", email, "--json")).stdout);
      expect(json[0]).toMatchObject({ id, provider: "bluebubbles", status: "connected", send_rate_per_second: 2 });

      bb.setHelperConnected(false);
      const basic = await admin("line", "test", "--line", id);
      expect(basic.stdout).toMatch(/advanced features: no/);
      expect(basic.stdout).toMatch(/helper is not connected/);

      await bb.close();
      const down = await admin("line", "test", "--line", id);
      expect(down.code).toBe(1);
      expect(down.stdout).toMatch(/probe: failed: could not reach BlueBubbles/);
      for (const r of [created, tested, listed, basic, down]) expect(r.stdout + r.stderr).not.toContain("cli-secret-pw");
      // PUBLIC_URL is the running server's (https, from its marker) or unknown here: never the CLI's own guess.
      for (const r of [created, tested, listed, basic, down]) expect(r.stderr).not.toMatch(/PUBLIC_URL is |localhost:3000/);
      expect(JSON.parse((await admin("line", "list", "--account", email, "--json")).stdout)[0].warnings).toEqual([]);

      const bad = await admin("line", "connect", "--line", id, "--provider", "bluebubbles", "--provider-config", '{"url":"nope"}');
      expect(bad.code).toBe(1);
      expect(bad.stderr).toMatch(/Invalid provider settings: url: must be the server's URL.*password/);
      const notJson = await admin("line", "connect", "--line", id, "--provider", "bluebubbles", "--provider-config", "{url:");
      expect(notJson.stderr).toMatch(/--provider-config must be a JSON object/);

      const back = await admin("line", "connect", "--line", id, "--provider", "simulated", "--provider-config", "{}");
      expect(back.code).toBe(0);
      expect(back.stdout).toMatch(/on simulated: connected/);
    } finally {
      await bb.close();
    }
  });

  it("takes provider settings from a file or stdin, so the password never is an argument", async () => {
    const bb = await startFakeBlueBubbles({ password: "file-secret-pw" });
    const dir = mkdtempSync(path.join(tmpdir(), "relay-provider-config-"));
    try {
      const email = `bbfile-${Date.now()}@example.com`;
      expect((await admin("account", "create", "--email", email)).code).toBe(0);
      const file = path.join(dir, "bluebubbles.json");
      writeFileSync(file, JSON.stringify({ url: bb.url, password: "file-secret-pw" }), { mode: 0o600 });
      const created = await admin("line", "create", "--account", email, "--handle", "+1 555 777 0003", "--provider", "bluebubbles", "--provider-config-file", file);
      expect(created.code, created.stderr).toBe(0);
      const id = created.stdout.trim();
      const tested = await admin("line", "test", "--line", id);
      expect(tested.stdout).toMatch(/on bluebubbles: connected/);
      expect(tested.stdout).toMatch(/probe: ok/);

      // stdin, through either flag; the settings replace the saved ones (a wrong password is refused by the probe).
      const settings = JSON.stringify({ url: bb.url, password: "file-secret-pw", sendTimeoutSeconds: 42 });
      const piped = await adminWithStdin(settings, "line", "connect", "--line", id, "--provider", "bluebubbles", "--provider-config", "-");
      expect(piped.code, piped.stderr).toBe(0);
      expect(piped.stdout).toMatch(/on bluebubbles: connected/);
      expect((await admin("line", "list", "--account", email)).stdout).toMatch(/sendTimeoutSeconds=42/);
      const pipedFile = await adminWithStdin(JSON.stringify({ url: bb.url, password: "file-secret-pw", sendTimeoutSeconds: 43 }), "line", "connect", "--line", id, "--provider", "bluebubbles", "--provider-config-file", "-");
      expect(pipedFile.code, pipedFile.stderr).toBe(0);
      expect((await admin("line", "list", "--account", email)).stdout).toMatch(/sendTimeoutSeconds=43/);

      // Mistakes name their source and change nothing.
      const both = await admin("line", "connect", "--line", id, "--provider", "bluebubbles", "--provider-config", "{}", "--provider-config-file", file);
      expect(both.code).toBe(1);
      expect(both.stderr).toMatch(/not both/);
      const missing = await admin("line", "connect", "--line", id, "--provider", "bluebubbles", "--provider-config-file", path.join(dir, "nope.json"));
      expect(missing.code).toBe(1);
      expect(missing.stderr).toMatch(/--provider-config-file .*nope\.json: cannot read it \(ENOENT\)/);
      const garbage = await adminWithStdin("url=http://x", "line", "connect", "--line", id, "--provider", "bluebubbles", "--provider-config", "-");
      expect(garbage.code).toBe(1);
      expect(garbage.stderr).toMatch(/--provider-config - \(stdin\) must be a JSON object/);
      expect((await admin("line", "list", "--account", email)).stdout).toMatch(/sendTimeoutSeconds=43/);
      for (const r of [created, tested, piped, pipedFile, both, missing, garbage]) expect(r.stdout + r.stderr).not.toContain("file-secret-pw");
    } finally {
      await bb.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

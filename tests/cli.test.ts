import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it, vi } from "vitest";
import { parseConfig, resetConfig } from "@/server/kernel/config";
import { findProvider } from "@/server/platform/registry";
import { SERVER_INFO_FILE, type ServerInfo, servedDatabase } from "@/server/boot/server-info";
import { validateSettings } from "@/server/services/lines/line-connections";
import { startFakeBlueBubbles } from "./fakes/bluebubbles";
import { get } from "./helpers";

// The operator CLI as an operator runs it: a separate process (the bundle the standalone tree
// ships; the e2e suites run `npm run admin`), results on stdout, errors on stderr.
// On PostgreSQL it shares this test file's schema, so its results are checked through the API.
// On PGlite a separate server process owns the data directory (as `npm run dev` would) and the
// CLI must reach it through the server's Unix socket.

const onPostgres = !!process.env.DATABASE_URL;
const TSX = path.resolve("node_modules/.bin/tsx");
/** The operator CLI as the standalone tree ships it, bundled once per run (tests/global-setup.ts). */
const ADMIN = inject("adminBundle");
let dataDir = "";
let server: ChildProcess | undefined;

/** The CLI's environment: an operator's shell, which has no PUBLIC_URL (the server's is in its marker, or unknown). */
function env(): NodeJS.ProcessEnv {
  const e: NodeJS.ProcessEnv = { ...process.env, NODE_ENV: "production" };
  delete e.PUBLIC_URL;
  if (!onPostgres) e.DATA_DIR = dataDir;
  else e.CREDENTIALS_KEY = "cli-test-credentials-key-0123456789abcdef"; // no DATA_DIR of its own to generate one in
  return e;
}

type Run = { code: number; stdout: string; stderr: string };

/** The CLI with env() (or `options.env`), in this repository's folder (or `options.cwd`). */
function adminIn(options: { env?: NodeJS.ProcessEnv; cwd?: string }, ...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [ADMIN, ...args], { env: options.env ?? env(), cwd: options.cwd, timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

const admin = (...args: string[]): Promise<Run> => adminIn({}, ...args);

/** The line a write command prints first on stderr: the database it works on (never a password). */
const USING = onPostgres ? /^using PostgreSQL at [^\n]+\/[^\n]+, data directory [^\n]+\n/ : /^using the embedded database in [^\n]+ \(through the server running on it, pid \d+\)[^\n]*\n/;

/** admin with `input` on its stdin (a pipe, as `cat settings.json | admin ...` gives it). */
function adminWithStdin(input: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [ADMIN, ...args], { env: env(), timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
    child.stdin!.end(input);
  });
}

beforeAll(async () => {
  if (onPostgres) return;
  dataDir = mkdtempSync(path.join(tmpdir(), "relay-cli-"));
  server = spawn(TSX, ["-e", "import('./server/boot/bootstrap.ts').then((m) => m.bootstrap()).then(() => console.log('ready'))"], {
    env: { ...env(), PUBLIC_URL: "https://relay.example.com" },
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

async function keyRowsThroughServerSocket(): Promise<{ name: string; scopes: string[]; rateLimitPerHour: number | null }[]> {
  const info = JSON.parse(readFileSync(path.join(dataDir, "server.json"), "utf8"));
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
    const info = JSON.parse(readFileSync(path.join(dataDir, "server.json"), "utf8"));
    expect(info.pgliteSocket.host).toBe(path.join(dataDir, "run"));
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
    else expect(account.stderr).toContain(` in ${dataDir} (`);
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

// The CLI works with the server's configuration (issue 37, items 11 and 12): the .env files of
// its folder as Next loads them for the server, the production defaults unless
// NODE_ENV=development, and never beside a running server's database.
describe("the server's configuration", { timeout: 180_000 }, () => {
  const scratch: string[] = [];
  const tempDir = (prefix: string) => {
    const dir = mkdtempSync(path.join(tmpdir(), prefix));
    scratch.push(dir);
    return dir;
  };
  afterAll(() => {
    for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
  });

  /** An app folder as the operator has one: the CLI runs there (migrations and packages as in the repository), with `dotenv` as its .env. */
  function appFolder(dotenv: Record<string, string>): string {
    const dir = tempDir("relay-cli-app-");
    for (const name of ["prisma", "node_modules"]) symlinkSync(path.resolve(name), path.join(dir, name));
    writeFileSync(path.join(dir, ".env"), Object.entries(dotenv).map(([k, v]) => `${k}=${v}`).join("\n"));
    return dir;
  }

  /** The CLI's environment without `names`. */
  function without(...names: string[]): NodeJS.ProcessEnv {
    const e = env();
    for (const name of names) delete e[name];
    return e;
  }
  /** Without the database settings, which a test gives the CLI another way. */
  const bare = () => without("DATABASE_URL", "DATABASE_SCHEMA", "DATA_DIR", "CREDENTIALS_KEY");

  it("reads DATABASE_URL / DATA_DIR from a .env file in its folder, and says so", async () => {
    const dotenv: Record<string, string> = onPostgres
      ? { DATABASE_URL: process.env.DATABASE_URL!, DATABASE_SCHEMA: process.env.DATABASE_SCHEMA!, CREDENTIALS_KEY: env().CREDENTIALS_KEY! }
      : { DATA_DIR: dataDir };
    const email = `dotenv-${Date.now()}@example.com`;
    const created = await adminIn({ env: bare(), cwd: appFolder(dotenv) }, "account", "create", "--email", email);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stderr).toMatch(USING);
    expect(created.stderr).toMatch(/; settings from the environment and \.env\n$/);
    expect(created.stdout + created.stderr).not.toContain(process.env.DATABASE_URL ?? "no url on PGlite");
    // Written where the server's data is: the CLI run with the explicit settings finds the account.
    const key = await admin("key", "create", "--account", email, "--name", "found");
    expect(key.code, key.stderr).toBe(0);
  });

  it("refuses to use the embedded database of a DATA_DIR a running server serves from PostgreSQL", async () => {
    const data = tempDir("relay-cli-marker-");
    const served = servedDatabase(parseConfig({ DATABASE_URL: "postgresql://relay:marker-secret@db.example:5432/relay" }));
    const marker: ServerInfo = { pid: process.pid, database: served, publicUrl: "https://relay.example.com", nodeEnv: "production" };
    writeFileSync(path.join(data, SERVER_INFO_FILE), JSON.stringify(marker));
    const refused = await adminIn({ env: { ...bare(), DATA_DIR: data } }, "account", "create", "--email", `marker-${Date.now()}@example.com`);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe("");
    expect(refused.stderr).toBe(
      `error: a server (pid ${process.pid}, NODE_ENV=production) runs on DATA_DIR ${data} with PostgreSQL at db.example:5432/relay, but this command would use the embedded database in ${data}: give the CLI the server's DATABASE_URL (and the rest of its settings): in the environment, or in a .env file in this folder, which the server reads too. (No such server? Then ${data}/server.json is left from one that was killed: delete it.)\n`,
    );
    expect(readdirSync(data)).toEqual([SERVER_INFO_FILE]); // nothing written

    // A marker left by a server that is gone (kill -9) stops nothing.
    const gone = spawn(process.execPath, ["-e", ""]);
    const deadPid = gone.pid!;
    await new Promise((r) => gone.once("exit", r));
    writeFileSync(path.join(data, SERVER_INFO_FILE), JSON.stringify({ ...marker, pid: deadPid }));
    const listed = await adminIn({ env: { ...bare(), DATA_DIR: data, PGLITE_THREAD: "false" } }, "line", "list");
    expect(listed.code, listed.stderr).toBe(0);
  });

  it.runIf(onPostgres)("refuses the embedded database while a server on PostgreSQL runs with that DATA_DIR (the marker the server leaves)", async () => {
    const data = tempDir("relay-cli-pgserver-");
    const serverEnv = { ...env(), DATA_DIR: data, PUBLIC_URL: "https://relay.example.com" };
    const pgServer = spawn(TSX, ["-e", "import('./server/boot/bootstrap.ts').then((m) => m.bootstrap()).then(() => console.log('ready'))"], {
      env: serverEnv,
      stdio: ["ignore", "pipe", "inherit"],
    });
    try {
      await new Promise<void>((resolve, reject) => {
        pgServer.stdout!.on("data", (d: Buffer) => d.toString().includes("ready") && resolve());
        pgServer.once("exit", (code) => reject(new Error(`server exited with ${code}`)));
      });
      const marker = JSON.parse(readFileSync(path.join(data, SERVER_INFO_FILE), "utf8")) as ServerInfo;
      // (tsx runs the server in a child process of its own: the marker names that one.)
      expect(marker).toMatchObject({ pid: expect.any(Number), database: { kind: "postgresql", at: expect.stringContaining(`(schema ${process.env.DATABASE_SCHEMA})`) }, publicUrl: "https://relay.example.com" });
      expect(JSON.stringify(marker)).not.toContain(new URL(process.env.DATABASE_URL!).password || "no password");
      const refused = await adminIn({ env: { ...bare(), DATA_DIR: data } }, "key", "create", "--account", "x@example.com", "--name", "x");
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/^error: a server \(pid \d+, NODE_ENV=production\) runs on DATA_DIR .* with PostgreSQL at .*give the CLI the server's DATABASE_URL/);
    } finally {
      pgServer.kill();
    }
  });

  it("applies the production defaults unless NODE_ENV=development: a loopback provider URL is refused with the server's message", async () => {
    const email = `prod-defaults-${Date.now()}@example.com`;
    expect((await admin("account", "create", "--email", email)).code).toBe(0);
    const settings = { url: "http://127.0.0.1:9", password: "pw" };
    // What the server answers for these settings (PROVIDER_ALLOW_PRIVATE unset, in production).
    process.env.PROVIDER_ALLOW_PRIVATE = "false";
    resetConfig();
    const serverMessage = await validateSettings(findProvider("bluebubbles")!, settings).then(
      () => "accepted",
      (err: Error) => err.message,
    );
    process.env.PROVIDER_ALLOW_PRIVATE = "true";
    resetConfig();
    expect(serverMessage).toContain("PROVIDER_ALLOW_PRIVATE");

    const unset = without("NODE_ENV", "PROVIDER_ALLOW_PRIVATE");
    const args = ["line", "create", "--account", email, "--handle", "+1 555 777 0009", "--provider", "bluebubbles", "--provider-config", JSON.stringify(settings)];
    const refused = await adminIn({ env: unset }, ...args);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(USING);
    expect(refused.stderr.replace(USING, "")).toBe(`error: ${serverMessage}\n`);
    expect((await admin("line", "list", "--account", email)).stdout.split("\n").filter(Boolean)).toHaveLength(1); // the header only

    const development = await adminIn({ env: { ...unset, NODE_ENV: "development" } }, ...args);
    expect(development.code, development.stderr).toBe(0);
    expect(development.stdout.trim()).toMatch(/^ln_/);
  });
});

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

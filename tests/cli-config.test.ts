import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseConfig, resetConfig } from "@/server/kernel/config";
import { findProvider } from "@/server/platform/registry";
import { SERVER_INFO_FILE, type ServerInfo, servedDatabase } from "@/server/boot/server-info";
import { validateSettings } from "@/server/services/lines/line-connections";
import { admin, adminIn, env, onPostgres, serverDataDir, TSX, USING, useAdminServer } from "./admin-cli";

useAdminServer();

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
      : { DATA_DIR: serverDataDir() };
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

  it("npm run db:deploy reads the same .env files: it migrates the DATA_DIR named there", async () => {
    const data = path.join(tempDir("relay-cli-deploy-"), "data");
    const folder = appFolder({ DATA_DIR: data });
    const deploy = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn(TSX, [path.resolve("scripts/migrate.ts"), "deploy"], { cwd: folder, env: { ...bare(), PGLITE_THREAD: "false" }, stdio: ["ignore", "pipe", "pipe"] });
      let out = "";
      child.stdout!.on("data", (d: Buffer) => (out += d));
      child.stderr!.on("data", (d: Buffer) => (out += d));
      child.once("close", (code) => resolve({ code, out }));
    });
    expect(deploy.code, deploy.out).toBe(0);
    expect(deploy.out).toContain("Migrations applied (pglite)");
    expect(existsSync(path.join(data, "pglite"))).toBe(true);
  });
});

import { type ChildProcess, execFile, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type S3Server, startS3 } from "../tests/s3";
import { freePort, freshPostgresDatabase, stopWithSigterm, waitUntilUp } from "./harness";

// The deploy artifact: the standalone server of `npm run build` (output: "standalone"), completed
// by deploy/prepare-standalone.mjs exactly as the Dockerfile does, copied out of the repository
// (so nothing can be found in the repository's node_modules) and run as the image runs it:
// `npm start` (scripts/start.mjs) with the image's environment, set up with `npm run -s admin` inside the tree:
// on PostgreSQL with files in an S3-compatible store (s3rver), as compose.yaml runs it, and on
// embedded PGlite with files in DATA_DIR, as the image runs on its own.

const tree = mkdtempSync(path.join(tmpdir(), "relay-standalone-"));
const dataDirs: string[] = [];
let child: ChildProcess | undefined;
const execFileAsync = promisify(execFile);
/** Operators see /readyz's details with it (outside development, never without one). */
const METRICS_TOKEN = "metrics-token-e2e-0123";

/** The image's environment (Dockerfile), plus what a test needs; nothing else from this process. */
function imageEnv(port: number, extra: Record<string, string>): NodeJS.ProcessEnv {
  const dataDir = mkdtempSync(path.join(tmpdir(), "relay-standalone-data-"));
  dataDirs.push(dataDir);
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    NODE_ENV: "production",
    NEXT_TELEMETRY_DISABLED: "1",
    NEXT_MANUAL_SIG_HANDLE: "true",
    HOSTNAME: "127.0.0.1",
    PORT: String(port),
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    DATA_DIR: dataDir,
    CREDENTIALS_KEY: randomBytes(32).toString("base64"),
    SHUTDOWN_GRACE_SECONDS: "10",
    // The test plays the other phone, so a contact can message the line first.
    SIMULATOR_ENABLED: "true",
    METRICS_TOKEN,
    ...extra,
  };
}

async function startTree(env: NodeJS.ProcessEnv): Promise<string> {
  // As the image runs it: the tree's `npm start` (node <flags> scripts/start.mjs), not Next's server.js.
  const start = (JSON.parse(readFileSync(path.join(tree, "package.json"), "utf8")) as { scripts: { start: string } }).scripts.start.split(" ");
  expect(start.slice(-1)).toEqual(["scripts/start.mjs"]);
  child = spawn(process.execPath, start.slice(1), { cwd: tree, env, stdio: ["ignore", "ignore", "inherit"] });
  const base = `http://127.0.0.1:${env.PORT}`;
  await waitUntilUp(`${base}/readyz`, child, "the standalone server did not come up");
  return base;
}

/** `npm run -s admin -- ...` in the tree, as `docker compose exec relay npm run -s admin -- ...` runs it. */
// Asynchronous on purpose: a synchronous call blocks this process's event loop for seconds, so
// fetch's pool never sees the server close its idle keep-alive connections (after 5 s) and
// sends the next request on a closed one ("other side closed").
async function admin(env: NodeJS.ProcessEnv, ...args: string[]): Promise<string> {
  const { stdout } = await execFileAsync("npm", ["run", "-s", "admin", "--", ...args], { cwd: tree, env, encoding: "utf8" });
  return stdout.trim();
}

/** SIGTERM: with NEXT_MANUAL_SIG_HANDLE the app alone handles it (server/boot/lifecycle.ts), and exits 0. */
async function stopTree(): Promise<void> {
  expect(await stopWithSigterm(child, "the standalone server")).toEqual({ code: 0, signal: null });
}

beforeAll(() => {
  if (!existsSync(".next/standalone/server.js")) throw new Error("no .next/standalone/server.js: run `npm run build` first");
  execFileSync(process.execPath, ["deploy/prepare-standalone.mjs", "--out", tree], { stdio: ["ignore", "ignore", "inherit"] });
  // Node looks for packages in every parent folder: the tree proves nothing if one has them.
  for (let dir = path.dirname(tree); ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, "node_modules"))) throw new Error(`${dir}/node_modules would serve what the tree lacks: set TMPDIR elsewhere`);
    if (dir === path.dirname(dir)) break;
  }
});

afterAll(() => {
  child?.kill("SIGKILL");
  for (const dir of [tree, ...dataDirs]) rmSync(dir, { recursive: true, force: true });
});

describe("standalone server against PostgreSQL and S3", () => {
  let database: Awaited<ReturnType<typeof freshPostgresDatabase>>;
  let s3: S3Server;
  let env: NodeJS.ProcessEnv;
  let base = "";
  let key = "";
  const line = "+15550007001";

  beforeAll(async () => {
    database = await freshPostgresDatabase("relay_standalone");
    s3 = await startS3({ bucket: "relay" });
    env = imageEnv(await freePort(), { DATABASE_URL: database.url, ...s3.env });
    base = await startTree(env);
  });

  afterAll(async () => {
    child?.kill("SIGKILL");
    await database?.drop();
    await s3?.stop();
  });

  it("holds no data of the machine that built it (the tracer copies the default DATA_DIR)", () => {
    expect(existsSync(path.join(tree, "data"))).toBe(false);
    expect(existsSync(path.join(tree, "app"))).toBe(false);
  });

  it("is ready, and serves the dashboard with its static assets", async () => {
    const ready = await fetch(`${base}/readyz`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } }); // details need the token
    expect(ready.status).toBe(200);
    expect(ready.headers.get("content-type")).toMatch(/^application\/json/);
    expect(await ready.json()).toMatchObject({ status: "ready", checks: { database: { ok: true, kind: "postgres" }, storage: { ok: true, kind: "s3" } } });

    const page = await fetch(`${base}/sign-in`);
    expect(page.status).toBe(200);
    // The build's config applies (the tree has no next.config: start.mjs passes the build's resolved one).
    expect(page.headers.get("x-frame-options")).toBe("DENY");
    expect(page.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    expect(page.headers.get("x-powered-by")).toBeNull();
    const script = (await page.text()).match(/\/_next\/static\/[^"]+\.js/)?.[0];
    expect(script).toBeDefined();
    expect((await fetch(`${base}${script}`)).status).toBe(200);
  });

  it("is set up with the operator CLI shipped in the tree", async () => {
    await admin(env, "account", "create", "--email", "ops@example.com", "--password", "standalone password 123");
    await admin(env, "line", "create", "--account", "ops@example.com", "--handle", line, "--advanced");
    key = await admin(env, "key", "create", "--account", "ops@example.com", "--name", "standalone");
    expect(key).toMatch(/^sk_live_/);
  });

  it("accepts a send and delivers it on the simulated platform", async () => {
    const auth = { authorization: `Bearer ${key}`, "content-type": "application/json" };
    const inbound = await fetch(`${base}/api/simulator/messages`, { method: "POST", headers: auth, body: JSON.stringify({ line, from: "+15550001111", text: "hi" }) });
    expect(inbound.status).toBe(201);
    const accepted = await fetch(`${base}/v1/messages`, { method: "POST", headers: auth, body: JSON.stringify({ from: line, to: "+15550001111", text: "from the standalone server" }) });
    expect(accepted.status).toBe(200);
    // Answered by the start script before Next's router (whose answers carry its Vary: rsc, ...).
    expect(accepted.headers.get("vary")).toBe("Accept-Encoding");
    const { id } = await accepted.json();
    const deadline = Date.now() + 15_000;
    let item = { status: "pending" };
    while (item.status === "pending" || item.status === "claimed") {
      expect(Date.now()).toBeLessThan(deadline);
      await new Promise((r) => setTimeout(r, 100));
      item = await (await fetch(`${base}/v1/outbox?id=${id}`, { headers: auth })).json();
    }
    expect(["sent", "delivered"]).toContain(item.status);
  });

  it("stores an upload in the bucket and serves the same bytes back through its signed URL", async () => {
    const bytes = randomBytes(300_000);
    const upload = await fetch(`${base}/v1/files`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/octet-stream", "x-filename": "blob.bin" },
      body: bytes,
    });
    expect(upload.status).toBe(201);
    const file = await upload.json();
    expect(file.size).toBe(bytes.length);
    const download = await fetch(file.url);
    expect(download.status).toBe(200);
    expect(Buffer.from(await download.arrayBuffer()).equals(bytes)).toBe(true);
  });

  it("exits on SIGTERM", () => stopTree());
});

describe("standalone server on embedded PGlite", () => {
  it("opens its database in DATA_DIR, serves the CLI on its socket and exits on SIGTERM", async () => {
    const env = imageEnv(await freePort(), {});
    const base = await startTree(env);
    await admin(env, "account", "create", "--email", "solo@example.com", "--password", "standalone password 123");
    const key = await admin(env, "key", "create", "--account", "solo@example.com", "--name", "solo");
    const lines = await fetch(`${base}/v1/lines`, { headers: { authorization: `Bearer ${key}` } });
    expect(lines.status).toBe(200);
    expect((await lines.json()).data).toEqual(expect.any(Array));
    await stopTree();
  });
});

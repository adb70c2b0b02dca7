import { type ChildProcess, execFile, execFileSync, spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { gunzipSync, gzipSync } from "node:zlib";
import { PGlite } from "@electric-sql/pglite";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { applyMigrations, readMigrations } from "@/server/db/migrations";
import { pgliteRunner } from "@/server/db/runners";

// `admin backup` and `admin restore` as an operator runs them: separate processes against a
// DATA_DIR. A server process (bootstrap: the database, its socket, the services) owns the
// source DATA_DIR, is seeded through the services (account, lines, keys, a connected line with
// encrypted credentials, messages with attachments, webhooks and deliveries), and on request
// keeps writing inbound messages with attachments while a backup is taken.

const onPostgres = !!process.env.DATABASE_URL;
const TSX = path.resolve("node_modules/.bin/tsx");
/** The operator CLI as the standalone tree ships it, bundled once per run (tests/global-setup.ts). */
const ADMIN = inject("adminBundle");
const root = mkdtempSync(path.join(tmpdir(), "relay-backup-"));
const sourceDir = path.join(root, "source");

function embeddedEnv(dataDir: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_ENV: "test", DATA_DIR: dataDir, LOG_LEVEL: "silent" };
  delete env.DATABASE_URL;
  delete env.DATABASE_SCHEMA;
  delete env.CREDENTIALS_KEY;
  delete env.STORAGE_URL;
  return env;
}

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function admin(env: NodeJS.ProcessEnv, ...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [ADMIN, ...args], { env, timeout: 120_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

// The server: bootstrap, then (SEED=1) seed through the services; "write" on stdin starts a
// writer of numbered inbound messages with attachments, "stop" ends it and reports the count.
const SERVER = `
(async () => {
  const out = (o) => process.stdout.write(JSON.stringify(o) + "\\n");
  const { bootstrap } = await import("./server/boot/bootstrap.ts");
  await bootstrap();
  if (process.env.SEED !== "1") return out({ ready: true });
  const { randomBytes } = await import("node:crypto");
  const modules = ["db/index", "services/accounts/accounts", "services/lines/lines", "services/lines/line-connections", "services/access/api-keys", "services/access/scopes", "services/messaging/files", "services/messaging/send", "services/webhooks/webhooks", "services/inbound/simulated-phone", "engine/outbox-runner", "engine/webhook-runner"];
  const [{ getDb }, { createAccount }, { createLine }, { createConnectedLine }, { authenticate, createApiKey }, { SCOPES }, { storeFile }, { sendMessage }, { createWebhook }, { simulateMessage }, { startRunner, stopRunner }, { startWebhookRunner, stopWebhookRunner }] =
    await Promise.all(modules.map((m) => import("./server/" + m + ".ts")));
  const account = await createAccount({ email: "owner@example.com", password: "correct horse battery staple" });
  const line = await createLine({ accountId: account.id, handle: "+15550000001", advancedFeatures: true });
  const { secret } = await createApiKey({ accountId: account.id, name: "backup", scopes: [...SCOPES] });
  await createApiKey({ accountId: account.id, name: "narrow", scopes: ["lines:read"], lineIds: [line.id], rateLimitPerHour: 100 });
  const actor = await authenticate("Bearer " + secret);
  await createConnectedLine({ accountId: account.id, handle: "+15550000002", provider: "bluebubbles", providerConfig: { url: "http://127.0.0.1:9", password: "bb-secret" } });
  await createWebhook(actor, { from: line.handle, url: "http://127.0.0.1:9/hook", events: ["message.received", "message.sent"] });
  const file = await storeFile(actor, { bytes: randomBytes(300000), mimeType: "application/octet-stream", filename: "blob.bin" });
  const picture = { filename: "pic.png", mime_type: "image/png", content_base64: randomBytes(50000).toString("base64") };
  await simulateMessage(actor, { line: line.handle, from: "+15557654321", text: "hi", attachment: picture });
  const sent = await sendMessage(actor, { from: line.handle, to: "+15557654321", text: "hello back", attachments: [file.id] }, "req_backup");
  await startRunner();
  startWebhookRunner();
  const db = await getDb();
  for (let i = 0; i < 300 && (await db.outboxItem.findUniqueOrThrow({ where: { id: sent.id } })).status !== "sent"; i++) await new Promise((r) => setTimeout(r, 100));
  for (let i = 0; i < 300 && (await db.webhookAttempt.count()) === 0; i++) await new Promise((r) => setTimeout(r, 100));
  await stopWebhookRunner();
  await stopRunner();
  await new Promise((r) => setTimeout(r, 500)); // the key's last-use stamp is written in the background
  out({ ready: true, line: line.handle });
  let writing = false;
  let written = 0;
  const write = async () => {
    while (writing) {
      written++;
      const attachment = { filename: "w.bin", mime_type: "application/octet-stream", content_base64: randomBytes(2000 + (written % 7) * 3000).toString("base64") };
      await simulateMessage(actor, { line: line.handle, from: "+15559990000", text: "w-" + written, attachment });
      if (written % 5 === 0) out({ written });
    }
    out({ stopped: written });
  };
  require("node:readline").createInterface({ input: process.stdin }).on("line", (command) => {
    if (command === "write" && !writing) { writing = true; void write(); }
    if (command === "stop") writing = false;
  });
})().catch((err) => { console.error(err); process.exit(1); });
`;

interface Server {
  child: ChildProcess;
  /** The next stdout message that has `field`. */
  next(field: string): Promise<Record<string, unknown>>;
  send(command: string): void;
  stop(): Promise<void>;
}

function startServer(dataDir: string, seed: boolean): Promise<Server> {
  const child = spawn(TSX, ["-e", SERVER], { env: { ...embeddedEnv(dataDir), SEED: seed ? "1" : "0" }, stdio: ["pipe", "pipe", "inherit"] });
  const waiting: { field: string; resolve: (m: Record<string, unknown>) => void }[] = [];
  createInterface({ input: child.stdout! }).on("line", (line) => {
    let message: Record<string, unknown>;
    try {
      message = JSON.parse(line);
    } catch {
      return;
    }
    const i = waiting.findIndex((w) => w.field in message);
    if (i >= 0) waiting.splice(i, 1)[0]!.resolve(message);
  });
  const server: Server = {
    child,
    next: (field) =>
      new Promise((resolve, reject) => {
        waiting.push({ field, resolve });
        child.once("exit", (code) => reject(new Error(`the server exited (${code})`)));
      }),
    send: (command) => child.stdin!.write(`${command}\n`),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    },
  };
  return server.next("ready").then(() => server);
}

type Rows = Record<string, string[]>;
const TABLES_SQL = `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind = 'r' ORDER BY 1`;

/** Every table's rows as JSON text, sorted. */
async function allRows(query: <T>(sql: string) => Promise<T[]>): Promise<Rows> {
  const rows: Rows = {};
  for (const { name } of await query<{ name: string }>(TABLES_SQL)) {
    rows[name] = (await query<{ r: string }>(`SELECT to_jsonb(x)::text AS r FROM "${name}" x ORDER BY 1`)).map((r) => r.r);
  }
  return rows;
}

/** Runs `fn` on a running server's database, through its socket. */
async function throughSocket<R>(dataDir: string, fn: (query: <T>(sql: string) => Promise<T[]>) => Promise<R>): Promise<R> {
  const info = JSON.parse(readFileSync(path.join(dataDir, "server.json"), "utf8"));
  const client = new pg.Client({ host: info.pgliteSocket.host, port: info.pgliteSocket.port, user: "postgres", database: "postgres" });
  await client.connect();
  try {
    return await fn(async <T>(sql: string) => (await client.query(sql)).rows as T[]);
  } finally {
    await client.end();
  }
}

/** Runs `fn` on a stopped DATA_DIR's database, opened here. */
async function directly<R>(dataDir: string, fn: (query: <T>(sql: string) => Promise<T[]>) => Promise<R>): Promise<R> {
  const db = await PGlite.create(path.join(dataDir, "pglite"));
  try {
    return await fn(async <T>(sql: string) => (await db.query<T>(sql)).rows);
  } finally {
    await db.close();
  }
}

function manifestOf(file: string) {
  return JSON.parse(execFileSync("tar", ["-xzOf", file, "manifest.json"], { encoding: "utf8" }));
}

const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

/** Every File row's bytes in `dataDir`, checked against the row's sha256. */
async function checkFiles(dataDir: string, query: <T>(sql: string) => Promise<T[]>): Promise<Map<string, Buffer>> {
  const files = await query<{ id: string; storageKey: string; sha256: string; size: number }>(`SELECT id, "storageKey", sha256, size FROM "File"`);
  const bytes = new Map<string, Buffer>();
  for (const f of files) {
    const content = readFileSync(path.join(dataDir, "files", f.storageKey));
    expect(content.length, f.id).toBe(f.size);
    expect(sha256(content), f.id).toBe(f.sha256);
    bytes.set(f.id, content);
  }
  return bytes;
}

const fresh = (name: string) => path.join(root, name);

afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("admin backup and restore against PostgreSQL", () => {
  it("refuses with one line saying it is pg_dump's job", async () => {
    const env = { ...embeddedEnv(fresh("pg")), DATABASE_URL: process.env.DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/test" };
    const backup = await admin(env, "backup", "--out", fresh("pg.tar.gz"));
    expect(backup.code).toBe(1);
    expect(backup.stderr).toMatch(/^error: DATABASE_URL is set: backups of PostgreSQL are pg_dump's job.*\n$/);
    const restore = await admin(env, "restore", "--from", fresh("pg.tar.gz"));
    expect(restore.code).toBe(1);
    expect(restore.stderr).toMatch(/^error: DATABASE_URL is set: restoring PostgreSQL is pg_restore's job.*\n$/);
    expect(existsSync(fresh("pg.tar.gz"))).toBe(false);
    expect(existsSync(fresh("pg"))).toBe(false);
  });
});

describe.skipIf(onPostgres)("admin backup and restore (embedded database)", { timeout: 240_000 }, () => {
  let server: Server;
  const backupFile = fresh("quiet.tar.gz");

  beforeAll(async () => {
    server = await startServer(sourceDir, true);
  }, 180_000);

  afterAll(async () => {
    await server?.stop();
  });

  it("round-trips every table's rows, the files and the credentials key while the server runs", async () => {
    const started = Date.now();
    const made = await admin(embeddedEnv(sourceDir), "backup", "--out", backupFile);
    expect(made.stderr).toBe("");
    expect(made.code).toBe(0);
    expect(made.stdout).toMatch(/contains secrets/);
    expect(made.stdout).toMatch(/\d+ files .*credentials\.key/);
    expect(statSync(backupFile).mode & 0o777).toBe(0o600);
    const backupMs = Date.now() - started;

    const source = await throughSocket(sourceDir, async (query) => ({ rows: await allRows(query), files: await checkFiles(sourceDir, query) }));
    expect(source.rows.Message!.length).toBeGreaterThanOrEqual(2);
    expect(source.rows.Attachment!.length).toBeGreaterThanOrEqual(2);
    expect(source.rows.Webhook!.length).toBe(1);
    expect(source.rows.WebhookDelivery!.length).toBeGreaterThanOrEqual(1);
    expect(source.rows.WebhookAttempt!.length).toBeGreaterThanOrEqual(1);
    expect(source.rows.ApiKey!.length).toBe(2);
    expect(source.files.size).toBeGreaterThanOrEqual(2); // the upload and the inbound picture

    const manifest = manifestOf(backupFile);
    const migrations = await readMigrations();
    expect(manifest).toMatchObject({ format: "relay-backup", format_version: 1, app_version: "0.1.0", credentials_key: true });
    expect(manifest.database.migration).toBe(migrations.at(-1)!.name);
    for (const [table, rows] of Object.entries(source.rows)) expect(manifest.database.tables[table].rows, table).toBe(rows.length);
    expect(manifest.files).toMatchObject({ count: source.files.size, missing: [] });
    const sourceFiles = await throughSocket(sourceDir, (q) => q<{ storageKey: string; sha256: string }>(`SELECT "storageKey", sha256 FROM "File"`));
    for (const f of sourceFiles) expect(manifest.entries[`files/${f.storageKey}`].sha256).toBe(f.sha256);

    const target = fresh("restored");
    const started2 = Date.now();
    const restored = await admin(embeddedEnv(target), "restore", "--from", backupFile);
    expect(restored.stderr).toBe("");
    expect(restored.code).toBe(0);
    expect(restored.stdout).toMatch(new RegExp(`^restored .* into .*restored: \\d+ rows in \\d+ tables, ${source.files.size} files, credentials\\.key$`, "m"));
    const restoreMs = Date.now() - started2;
    expect(readdirSync(target).sort()).toEqual(["credentials.key", "files", "pglite"]);
    expect(readFileSync(path.join(target, "credentials.key"))).toEqual(readFileSync(path.join(sourceDir, "credentials.key")));
    expect(statSync(path.join(target, "credentials.key")).mode & 0o777).toBe(0o600);

    const copy = await directly(target, async (query) => ({ rows: await allRows(query), files: await checkFiles(target, query) }));
    expect(Object.keys(copy.rows)).toEqual(Object.keys(source.rows));
    for (const table of Object.keys(source.rows)) expect(copy.rows[table], table).toEqual(source.rows[table]);
    expect([...copy.files.keys()].sort()).toEqual([...source.files.keys()].sort());
    for (const [id, bytes] of source.files) expect(copy.files.get(id)!.equals(bytes), id).toBe(true);
    console.log(`[backup] ${Object.values(source.rows).flat().length} rows, backup ${backupMs} ms, restore ${restoreMs} ms`);
  });

  it("takes a point-in-time snapshot while the server writes messages with attachments", async () => {
    server.send("write");
    for (let seen = 0; seen < 10; ) seen = Number((await server.next("written")).written);
    const file = fresh("busy.tar.gz");
    const made = await admin(embeddedEnv(sourceDir), "backup", "--out", file);
    server.send("stop");
    const written = Number((await server.next("stopped")).stopped);
    expect(made.stderr).toBe("");
    expect(made.code).toBe(0);

    const target = fresh("busy");
    expect((await admin(embeddedEnv(target), "restore", "--from", file)).code).toBe(0);
    const manifest = manifestOf(file);
    await directly(target, async (query) => {
      // The writer's messages in the copy are 1..k with none missing: one moment of its sequence.
      const numbers = (await query<{ text: string }>(`SELECT text FROM "Message" WHERE text LIKE 'w-%'`)).map((m) => Number(m.text.slice(2))).sort((a, b) => a - b);
      expect(numbers.length).toBeGreaterThan(0);
      expect(numbers).toEqual(numbers.map((_, i) => i + 1));
      expect(numbers.length).toBeLessThanOrEqual(written);
      const orphans = await query<{ n: number }>(
        `SELECT count(*)::int AS n FROM "Attachment" a LEFT JOIN "File" f ON f.id = a."fileId" LEFT JOIN "Message" m ON m.id = a."messageId" WHERE f.id IS NULL OR m.id IS NULL`,
      );
      expect(orphans[0]!.n).toBe(0);
      const withAttachment = await query<{ n: number }>(`SELECT count(*)::int AS n FROM "Message" m JOIN "Attachment" a ON a."messageId" = m.id WHERE m.text LIKE 'w-%'`);
      expect(withAttachment[0]!.n).toBe(numbers.length);
      const files = await checkFiles(target, query);
      expect(files.size).toBe(manifest.files.count);
      for (const { name } of await query<{ name: string }>(TABLES_SQL)) {
        const [{ n }] = (await query<{ n: number }>(`SELECT count(*)::int AS n FROM "${name}"`)) as [{ n: number }];
        expect(n, name).toBe(manifest.database.tables[name].rows);
      }
      console.log(`[backup] under writes: ${numbers.length} of ${written} written messages in the snapshot`);
    });
  });

  it("refuses to restore while the server runs, and over existing data without --force", async () => {
    const running = await admin(embeddedEnv(sourceDir), "restore", "--from", backupFile, "--force");
    expect(running.code).toBe(1);
    expect(running.stderr).toMatch(/^error: The database in .* is in use by process \d+ \(a running server, or another admin command\): stop it before restoring\.\n$/);

    const target = fresh("existing");
    expect((await admin(embeddedEnv(target), "restore", "--from", backupFile)).code).toBe(0);
    const marker = path.join(target, "files", "marker.txt");
    writeFileSync(marker, "the old data");
    const refused = await admin(embeddedEnv(target), "restore", "--from", backupFile);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^error: .*existing already holds a database; pass --force to move it aside to .*existing\.before-restore-<time> and restore\.\n$/);
    expect(readFileSync(marker, "utf8")).toBe("the old data");

    const forced = await admin(embeddedEnv(target), "restore", "--from", backupFile, "--force");
    expect(forced.code).toBe(0);
    const aside = readdirSync(root).filter((n) => n.startsWith("existing.before-restore-"));
    expect(aside).toHaveLength(1);
    expect(forced.stdout).toContain(`is now in ${path.join(root, aside[0]!)}`);
    expect(readFileSync(path.join(root, aside[0]!, "files", "marker.txt"), "utf8")).toBe("the old data");
    expect(existsSync(path.join(root, aside[0]!, "pglite", "PG_VERSION"))).toBe(true);
    expect(existsSync(marker)).toBe(false);
    expect(readdirSync(target).sort()).toEqual(["credentials.key", "files", "pglite"]);
  });

  it("refuses unreadable, corrupt, truncated or altered backups with one line and changes nothing", async () => {
    const good = readFileSync(backupFile);
    const flipped = Buffer.from(good);
    flipped[Math.floor(good.length / 2)]! ^= 0xff;
    // A well-formed archive whose stored file no longer matches the manifest's sha256.
    const tar = gunzipSync(good);
    let at = 0;
    while (tar.toString("latin1", at, at + 6) !== "files/") at += 512; // headers start on 512-byte blocks
    tar[at + 512 + 100]! ^= 0xff; // a byte of the first file's body, after its header
    const cases: [string, Buffer | null, RegExp][] = [
      ["missing.tar.gz", null, /Cannot read .*missing\.tar\.gz: no such file\./],
      ["garbage.tar.gz", randomBytes(4096), /is not a readable Relay backup: not gzip data, damaged or truncated/],
      ["truncated.tar.gz", good.subarray(0, Math.floor(good.length * 0.6)), /is not a readable Relay backup: .*(truncated|unexpected end)/],
      ["flipped.tar.gz", flipped, /is not a readable Relay backup/],
      ["altered.tar.gz", gzipSync(tar), /is not a readable Relay backup: files\/.* is damaged \(its sha256 differs from the manifest's\)/],
      ["plain.tar.gz", gzipSync(Buffer.alloc(1024)), /is not a readable Relay backup: it has no manifest\.json/],
    ];
    const existing = fresh("existing");
    const before = readdirSync(root).sort();
    for (const [name, bytes, message] of cases) {
      const file = fresh(name);
      if (bytes) writeFileSync(file, bytes);
      for (const [dir, args] of [
        [fresh("never"), []],
        [existing, ["--force"]],
      ] as const) {
        const run = await admin(embeddedEnv(dir), "restore", "--from", file, ...args);
        expect(run.code, `${name} ${run.stderr}`).toBe(1);
        expect(run.stderr, name).toMatch(message);
        expect(run.stderr.trim().split("\n"), name).toHaveLength(1);
      }
      expect(existsSync(fresh("never")), name).toBe(false);
      expect(readdirSync(existing).sort(), name).toEqual(["credentials.key", "files", "pglite"]);
      rmSync(file, { force: true });
    }
    expect(readdirSync(root).sort()).toEqual(before);
  });

  it("restores a backup of an older schema, which the server then migrates on start", async () => {
    const migrations = await readMigrations();
    const old = fresh("old");
    mkdirSync(path.join(old, "files", "ld"), { recursive: true });
    const db = await PGlite.create(path.join(old, "pglite"));
    await applyMigrations(pgliteRunner(db), migrations.slice(0, 1));
    const bytes = randomBytes(12_345);
    await db.exec(`
      INSERT INTO "Account" (id, email) VALUES ('acct_old', 'old@example.com');
      INSERT INTO "Line" (id, "accountId", handle, "advancedFeatures") VALUES ('ln_old', 'acct_old', '+15550009999', true);
      INSERT INTO "File" (id, "accountId", filename, "mimeType", size, sha256, "storageKey")
        VALUES ('file_old', 'acct_old', 'old.bin', 'application/octet-stream', ${bytes.length}, '${sha256(bytes)}', 'ld/file_old');`);
    await db.close();
    writeFileSync(path.join(old, "files", "ld", "file_old"), bytes);

    const file = fresh("old.tar.gz");
    const made = await admin(embeddedEnv(old), "backup", "--out", file); // no server: opens DATA_DIR itself
    expect(made.code, made.stderr).toBe(0);
    expect(manifestOf(file).database.migration).toBe(migrations[0]!.name);

    const target = fresh("old-restored");
    const restored = await admin(embeddedEnv(target), "restore", "--from", file);
    expect(restored.code, restored.stderr).toBe(0);
    expect(restored.stdout).toMatch(/no credentials\.key/);
    const upgraded = await startServer(target, false);
    try {
      await throughSocket(target, async (query) => {
        const applied = (await query<{ migration_name: string }>(`SELECT migration_name FROM "_prisma_migrations" ORDER BY 1`)).map((r) => r.migration_name);
        expect(applied).toEqual(migrations.map((m) => m.name));
        const [line] = await query<{ handle: string; advancedFeatures: boolean; status: string; sendRatePerSecond: number }>(`SELECT * FROM "Line" WHERE id = 'ln_old'`);
        expect(line).toMatchObject({ handle: "+15550009999", advancedFeatures: true, status: "connected", sendRatePerSecond: 1 }); // columns of later migrations
        expect((await checkFiles(target, query)).get("file_old")!.equals(bytes)).toBe(true);
      });
    } finally {
      await upgraded.stop();
    }
  });
});

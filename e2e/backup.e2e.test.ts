import { execFile } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestServer, testServer } from "./harness";

// `admin backup` against `npm start` while clients write over HTTP (inbound messages with
// attachments, sends, uploads), then `admin restore` into a new DATA_DIR and `npm start` on
// it: the same key works, the writes in the copy are one unbroken prefix of those accepted,
// and every attachment downloads with its bytes.

const TSX = path.resolve("node_modules/.bin/tsx");
const LINE = "+15550007070";
const CONTACT = "+15550001234";
const root = mkdtempSync(path.join(tmpdir(), "relay-backup-e2e-"));

function admin(env: NodeJS.ProcessEnv, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(TSX, ["scripts/admin.ts", ...args], { env, timeout: 120_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

interface MessageJson {
  id: string;
  text: string | null;
  attachments: { url: string; size: number }[];
}

/** Every message of the line, through the API (all pages). */
async function allMessages(base: string, key: string): Promise<MessageJson[]> {
  const all: MessageJson[] = [];
  let cursor = "";
  for (;;) {
    const page = await (await fetch(`${base}/v1/messages?from=${encodeURIComponent(LINE)}&limit=100${cursor}`, { headers: { authorization: `Bearer ${key}` } })).json();
    all.push(...page.data);
    if (!page.has_more) return all;
    cursor = `&cursor=${encodeURIComponent(page.next_cursor)}`;
  }
}

let source: TestServer;
let copy: TestServer | undefined;
let key = "";
/** The bytes each numbered message carried, by its text. */
const sentBytes = new Map<string, string>();

beforeAll(async () => {
  source = await testServer({ WEBHOOK_ALLOW_INSECURE: "true" });
  source.admin("account", "create", "--email", "backup@example.com", "--password", "backup password 123");
  source.admin("line", "create", "--account", "backup@example.com", "--handle", LINE, "--advanced");
  key = source.admin("key", "create", "--account", "backup@example.com", "--name", "backup");
});

afterAll(async () => {
  await copy?.dispose();
  await source?.dispose();
  rmSync(root, { recursive: true, force: true });
});

describe("backup and restore against npm start", () => {
  it("backs up while clients write, restores into a new DATA_DIR, and the server serves the copy", { timeout: 300_000 }, async () => {
    const auth = { authorization: `Bearer ${key}`, "content-type": "application/json" };
    const inbound = async (text: string) => {
      const bytes = randomBytes(1000 + Math.floor(Math.random() * 20_000));
      const res = await fetch(`${source.base}/api/simulator/messages`, {
        method: "POST",
        headers: auth,
        body: JSON.stringify({ line: LINE, from: CONTACT, text, attachment: { filename: "w.bin", mime_type: "application/octet-stream", content_base64: bytes.toString("base64") } }),
      });
      expect(res.status, text).toBe(201);
      sentBytes.set(text, sha256(bytes));
    };
    await inbound("w-0");
    const hook = await fetch(`${source.base}/v1/webhooks`, { method: "POST", headers: auth, body: JSON.stringify({ from: LINE, url: "http://127.0.0.1:9/hook", events: ["message.received"] }) });
    expect(hook.status).toBe(200);
    const upload = await fetch(`${source.base}/v1/files`, { method: "POST", headers: { authorization: `Bearer ${key}`, "content-type": "image/png" }, body: randomBytes(200_000) });
    expect(upload.status).toBe(201);
    const send = await fetch(`${source.base}/v1/messages`, { method: "POST", headers: auth, body: JSON.stringify({ from: LINE, to: CONTACT, text: "with a file", attachments: [(await upload.json()).id] }) });
    expect(send.status).toBe(200);
    const outboxId = (await send.json()).id;
    for (let status = "pending"; status !== "sent"; ) {
      status = (await (await fetch(`${source.base}/v1/outbox?id=${outboxId}`, { headers: auth })).json()).status;
      expect(["pending", "claimed", "sent"]).toContain(status);
    }

    // A client writing numbered messages, one after another, through the whole backup.
    let writing = true;
    let written = 0;
    const writer = (async () => {
      while (writing) await inbound(`w-${++written}`);
    })();
    while (written < 10) await new Promise((r) => setTimeout(r, 50));
    const file = path.join(root, "backup.tar.gz");
    const before = written;
    const started = Date.now();
    const made = await admin(source.env, "backup", "--out", file);
    const backupMs = Date.now() - started;
    const after = written;
    writing = false;
    await writer;
    expect(made.stderr).toBe("");
    expect(made.code).toBe(0);
    expect(made.stdout).toMatch(/contains secrets/);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    await source.stop();

    const refused = await admin(source.env, "restore", "--from", file);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/already holds a database; pass --force/);

    const dataDir = path.join(root, "restored");
    const restored = await admin({ ...source.env, DATA_DIR: dataDir }, "restore", "--from", file);
    expect(restored.stderr).toBe("");
    expect(restored.code).toBe(0);
    copy = await testServer({ WEBHOOK_ALLOW_INSECURE: "true", DATA_DIR: dataDir });

    const messages = await allMessages(copy.base, key); // the restored key hash lets the same key in
    const numbered = messages.filter((m) => m.text?.startsWith("w-")).map((m) => Number(m.text!.slice(2))).sort((a, b) => a - b);
    expect(numbered.length).toBeGreaterThan(10);
    expect(numbered).toEqual(numbered.map((_, i) => i)); // w-0 .. w-k, none missing
    expect(numbered.length).toBeLessThanOrEqual(written + 1);
    for (const m of messages.filter((m) => m.text?.startsWith("w-"))) {
      expect(m.attachments).toHaveLength(1);
      const download = await fetch(m.attachments[0]!.url);
      expect(download.status, m.text!).toBe(200);
      expect(sha256(new Uint8Array(await download.arrayBuffer())), m.text!).toBe(sentBytes.get(m.text!));
    }
    const withFile = messages.find((m) => m.text === "with a file");
    expect(withFile?.attachments[0]?.size).toBe(200_000);
    const hooks = await (await fetch(`${copy.base}/v1/webhooks`, { headers: { authorization: `Bearer ${key}` } })).json();
    expect(hooks.data).toHaveLength(1);
    console.log(`[backup e2e] backup took ${backupMs} ms while the writer went from w-${before} to w-${after}; the copy holds w-0..w-${numbered.length - 1}`);
  });
});

import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { EXIT, runCli } from "@/packages/client/src/cli/run";
import { encodeQr } from "@/packages/client/src/cli/qr";
import { verifyWebhook } from "@/packages/client/src/webhooks";
import { newId } from "@/server/kernel/ids";
import { createLine } from "@/server/services/lines/lines";
import { setLinePolicy } from "@/server/services/lines/set-line-policy";
import { createPool } from "@/server/services/pools/pools";
import { dispatch, inbound, makeAccount, makeKey, phone, runDelivery, type Fixture } from "./helpers";

// The `relay` command line, driven in-process against the real route handlers: output,
// --json, exit codes, the config file, and listen --forward-to.

const configDir = mkdtempSync(path.join(tmpdir(), "relay-cli-"));
runDelivery();
afterAll(() => rmSync(configDir, { recursive: true, force: true }));

const apiFetch: typeof fetch = async (input, init) => dispatch(new Request(input instanceof Request ? input : String(input), init));

async function relay(args: string[], env: Record<string, string> = {}, signal?: AbortSignal) {
  let stdout = "";
  let stderr = "";
  const code = await runCli(args, {
    stdout: (t) => (stdout += t),
    stderr: (t) => (stderr += t),
    env: { RELAY_CONFIG_DIR: configDir, RELAY_BASE_URL: "http://localhost:3000", ...env },
    fetch: apiFetch,
    signal,
  });
  return { code, stdout, stderr };
}

/** `relay listen ARGS` running in the background until stop(); ready() waits for its ready line. */
function listenInBackground(args: string[], env: Record<string, string> = {}) {
  const abort = new AbortController();
  const out = { stdout: "", stderr: "" };
  const running = runCli(["listen", ...args], {
    stdout: (t) => (out.stdout += t),
    stderr: (t) => (out.stderr += t),
    env: { RELAY_CONFIG_DIR: configDir, RELAY_BASE_URL: "http://localhost:3000", ...env },
    fetch: apiFetch,
    signal: abort.signal,
  });
  return {
    out,
    ready: () => vi.waitFor(() => expect(out.stdout).toContain('"type":"ready"'), { timeout: 10_000, interval: 20 }),
    stop: () => {
      abort.abort();
      return running.catch(() => EXIT.ok);
    },
  };
}

describe("relay CLI", () => {
  let f: Fixture;
  let alice = "";
  beforeAll(async () => {
    f = await makeAccount();
    alice = phone();
    await inbound(f, alice, "hello cli");
  });

  it("asks for a key first, and logs in by saving a checked key in a private config file", async () => {
    const none = await relay(["lines"]);
    expect(none.code).toBe(EXIT.auth);
    expect(none.stderr).toContain("relay login --key");
    const bad = await relay(["login", "--key", "sk_live_nope"]);
    expect(bad.code).toBe(EXIT.auth);
    expect(bad.stderr).toContain("invalid_api_key");
    const ok = await relay(["login", "--key", f.key]);
    expect(ok.code).toBe(EXIT.ok);
    expect(ok.stdout).toContain("Logged in");
    expect(statSync(path.join(configDir, "config.json")).mode & 0o777).toBe(0o600);
    const lines = await relay(["lines"]);
    expect(lines.code).toBe(EXIT.ok);
    expect(lines.stdout).toMatch(/^HANDLE\s+LABEL\s+SERVICE\s+PROVIDER\s+HEALTH/);
    expect(lines.stdout).toMatch(new RegExp(`${f.line.handle.replace("+", "\\+")}\\s.*simulated\\s+connected`));

    expect((await relay(["logout"])).stdout).toContain("Logged out");
    expect((await relay(["lines"])).code).toBe(EXIT.auth);
    expect((await relay(["logout"])).stdout).toContain("Not logged in");
    expect((await relay(["login", "--key", f.key])).code).toBe(EXIT.ok);
  });

  it("lists chats and messages, as tables or --json", async () => {
    const chats = await relay(["chats", "--from", f.line.handle]);
    expect(chats.stdout).toContain(alice);
    const messages = JSON.parse((await relay(["messages", "--from", f.line.handle, "--to", alice, "--json"])).stdout);
    expect(messages.data[0]).toMatchObject({ text: "hello cli", is_from_me: false });
  });

  it("sends and waits until sent; API errors and usage errors have their own exit codes", async () => {
    const sent = await relay(["send", "--from", f.line.handle, "--to", alice, "--text", "from the cli", "--wait", "--json"]);
    expect(sent.code).toBe(EXIT.ok);
    expect(JSON.parse(sent.stdout)).toMatchObject({ object: "outbox_item", status: "sent" });
    const failed = await relay(["send", "--from", f.line.handle, "--to", "+15005550001", "--text", "x"]);
    expect(failed.code).toBe(EXIT.apiError);
    expect(failed.stderr).toContain("contact_has_not_messaged");
    expect(failed.stderr).toContain("must message the line first");
    expect((await relay(["send", "--from", f.line.handle])).code).toBe(EXIT.usage);
    expect((await relay(["nonsense"])).code).toBe(EXIT.usage);
    expect((await relay(["lines", "--bogus"])).code).toBe(EXIT.usage);
  });

  it("a key's guardrails refuse on the command line too, each with its code and the API-error exit code", async () => {
    const bob = phone();
    await inbound(f, bob, "hi");
    const agent = await makeKey(f.accountId, { guardrails: { allow_to: [alice], max_sends_per_chat_without_reply: 1, max_sends_per_day: 2 } });
    const as = (args: string[]) => relay(args, { RELAY_API_KEY: agent });
    const refused = await as(["send", "--from", f.line.handle, "--to", bob, "--text", "x"]);
    expect(refused.code).toBe(EXIT.apiError);
    expect(refused.stderr).toContain("recipient_not_allowed");
    expect((await as(["send", "--from", f.line.handle, "--to", alice, "--text", "one"])).code).toBe(EXIT.ok);
    const again = await as(["send", "--from", f.line.handle, "--to", alice, "--text", "two"]);
    expect(again.code).toBe(EXIT.apiError);
    expect(again.stderr).toContain("reply_required");
  });

  it("outbox list --hold approval shows what an agent waits to send; approve sends it, reject fails it; chats pause and resume a takeover", async () => {
    const carol = phone();
    await inbound(f, carol, "hi there");
    const agent = await makeKey(f.accountId, { guardrails: { require_approval: true } });
    const as = (args: string[]) => relay(args, { RELAY_API_KEY: agent });
    const owner = (args: string[]) => relay(args, { RELAY_API_KEY: f.key });
    const ids: string[] = [];
    for (const text of ["may I say this?", "and this?"]) {
      const held = await as(["send", "--from", f.line.handle, "--to", carol, "--text", text, "--json"]);
      expect(held.code).toBe(EXIT.ok);
      const { id } = JSON.parse(held.stdout);
      expect((await owner(["outbox", "get", id])).stdout).toContain(`${id}: pending (held: approval)`);
      ids.push(id);
    }
    const [first, second] = ids as [string, string];

    const queue = await owner(["outbox", "list", "--hold", "approval"]);
    expect(queue.code).toBe(EXIT.ok);
    expect(queue.stdout).toMatch(/^ID\s+KIND\s+TO\s+WHAT\s+STATUS\s+HELD\s+CREATED/);
    expect(queue.stdout).toMatch(new RegExp(`${first}\\s+message\\s+${carol.replace("+", "\\+")}\\s+may I say this\\?\\s+pending\\s+approval`));
    expect(queue.stdout).toContain(second);
    const listed = JSON.parse((await owner(["outbox", "list", "--hold", "approval", "--from", f.line.handle, "--json"])).stdout);
    expect(listed.data.map((i: { id: string }) => i.id).sort()).toEqual([...ids].sort());

    // The agent's key cannot decide on its own sends.
    const self = await as(["outbox", "approve", first]);
    expect(self.code).toBe(EXIT.apiError);
    expect(self.stderr).toContain("insufficient_scope");
    expect(self.stderr).toContain("Create a key with that scope");

    const approved = await owner(["outbox", "approve", first]);
    expect(approved.code).toBe(EXIT.ok);
    expect(approved.stdout).toContain(`Approved ${first}: it goes now.`);
    expect(JSON.parse((await owner(["outbox", "get", first, "--wait", "--json"])).stdout)).toMatchObject({ status: "sent" });
    const rejected = await owner(["outbox", "reject", second, "--json"]);
    expect(JSON.parse(rejected.stdout)).toMatchObject({ id: second, status: "failed", error: "rejected" });
    const twice = await owner(["outbox", "reject", second]);
    expect(twice.code).toBe(EXIT.apiError);
    expect(twice.stderr).toContain("outbox_item_not_reviewable");
    expect((await owner(["outbox", "list", "--hold", "approval"])).stdout).toBe("(none)\n");
    expect(JSON.parse((await owner(["outbox", "list", "--status", "failed", "--json"])).stdout).data[0]).toMatchObject({ id: second, error: "rejected" });

    // --wait on a send held for approval: not a timeout asking whether the server runs, but what it waits for and how to approve it, at once.
    const started = Date.now();
    const waited = await as(["send", "--from", f.line.handle, "--to", carol, "--text", "may I wait?", "--wait"]);
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(waited.code).toBe(EXIT.network);
    const heldId = /^(obx_\w+) is waiting for the owner's approval: it has not been sent\.\n/m.exec(waited.stderr)?.[1];
    expect(heldId, waited.stderr).toBeDefined();
    expect(waited.stderr).toContain("the dashboard's Approvals page (http://localhost:3000/dashboard/approvals)");
    expect(waited.stderr).toContain(`relay outbox approve ${heldId}`);
    expect(waited.stderr).not.toContain("Is the server running");
    const waitedJson = await as(["outbox", "get", heldId!, "--wait", "--json"]);
    expect(waitedJson.code).toBe(EXIT.network);
    expect(JSON.parse(waitedJson.stdout)).toMatchObject({ id: heldId, status: "pending", hold_reason: "approval" });
    expect((await owner(["outbox", "reject", heldId!])).code).toBe(EXIT.ok);

    // Takeover: the agent is refused in a paused chat until it is resumed.
    const chatId = JSON.parse((await owner(["chats", "--from", f.line.handle, "--json"])).stdout).data.find((c: { identifier: string }) => c.identifier === carol).id;
    const paused = await owner(["chats", "pause", chatId]);
    expect(paused.code).toBe(EXIT.ok);
    expect(paused.stdout).toMatch(new RegExp(`^Paused ${chatId} \\(\\${carol}\\) since \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d UTC by key_`));
    expect((await owner(["chats", "--from", f.line.handle])).stdout).toMatch(new RegExp(`\\${carol}\\s.*since \\d{4}-`));
    const refused = await as(["send", "--from", f.line.handle, "--to", carol, "--text", "still there?"]);
    expect(refused.code).toBe(EXIT.apiError);
    expect(refused.stderr).toContain("chat_paused");
    expect((await owner(["send", "--from", f.line.handle, "--to", carol, "--text", "a human here", "--wait"])).code).toBe(EXIT.ok);
    const resumed = await owner(["chats", "resume", chatId, "--json"]);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ id: chatId, paused_at: null, paused_by: null });
    expect((await as(["send", "--from", f.line.handle, "--to", carol, "--text", "back"])).code).toBe(EXIT.ok);

    expect((await owner(["outbox", "list", "--hold", "later"])).stderr).toContain("--hold must be one of scheduled, quiet_hours, new_contact_budget, approval");
    expect((await owner(["outbox", "list", "--status", "done"])).code).toBe(EXIT.usage);
    expect((await owner(["chats", "pause"])).stderr).toContain("usage: relay chats pause CHAT_ID");
    expect((await owner(["outbox", "approve"])).code).toBe(EXIT.usage);
  });

  it("reacts, types, marks read, uploads files, manages webhooks and shows the sandbox", async () => {
    const [first] = JSON.parse((await relay(["messages", "--from", f.line.handle, "--to", alice, "--json"])).stdout).data.slice(-1);
    const reacted = await relay(["react", "--from", f.line.handle, "--to", alice, "--message", first.id, "--type", "love", "--wait", "--json"]);
    expect(reacted.code).toBe(EXIT.ok);
    expect(JSON.parse(reacted.stdout)).toMatchObject({ status: "sent" });
    expect((await relay(["react", "--from", f.line.handle, "--to", alice, "--message", first.id, "--type", "hug"])).code).toBe(EXIT.usage);
    expect((await relay(["typing", "--from", f.line.handle, "--to", alice])).stdout).toContain("Typing started");
    expect((await relay(["read", "--from", f.line.handle, "--to", alice])).stdout).toContain("Marked read");

    const dir = mkdtempSync(path.join(tmpdir(), "relay-cli-file-"));
    writeFileSync(path.join(dir, "note.txt"), "attached from the cli");
    const uploaded = JSON.parse((await relay(["files", "upload", path.join(dir, "note.txt"), "--json"])).stdout);
    expect(uploaded).toMatchObject({ object: "file", filename: "note.txt", size: 21 });
    const withFile = await relay(["send", "--from", f.line.handle, "--to", alice, "--attach", path.join(dir, "note.txt"), "--wait"]);
    expect(withFile.stdout).toMatch(/obx_\w+: sent/);
    expect((await relay(["files", "upload", path.join(dir, "missing.txt")])).code).toBe(EXIT.usage);
    rmSync(dir, { recursive: true, force: true });

    const created = await relay(["webhooks", "create", "--from", f.line.handle, "--url", "https://example.com/hook", "--events", "message.received", "--json"]);
    const hook = JSON.parse(created.stdout);
    expect(hook.secret).toMatch(/^whsec_/);
    expect((await relay(["webhooks", "list"])).stdout).toContain(hook.id);
    await inbound(f, alice, "for the webhook");
    await vi.waitFor(async () => expect((await relay(["webhooks", "deliveries", hook.id])).stdout).toContain("message.received"));
    expect((await relay(["webhooks", "resend", "--webhook", hook.id, "--since", "2020-01-01"])).stdout).toMatch(/Resent \d+/);
    expect((await relay(["webhooks", "delete", hook.id])).stdout).toContain(`Deleted ${hook.id}`);
    expect((await relay(["webhooks", "delete", hook.id])).stderr).toContain("webhook_not_found");

    const sandbox = await relay(["sandbox", "status"]);
    expect(sandbox.code).toBe(EXIT.ok);
    expect(sandbox.stdout).toContain("Sandbox: missing");
    const activated = await relay(["sandbox", "activate"]);
    expect(activated.stdout).toMatch(/text RELAY-\w+ to \+\d+ from your phone/);
  });

  it("sandbox activate draws the sms: link as a QR code that reads back module for module", async () => {
    const { stdout } = await relay(["sandbox", "activate"]);
    const link = stdout.match(/^sms:\S+$/m)![0];
    expect(link).toMatch(/^sms:\+\d+\?&body=RELAY-\w+$/);
    const code = encodeQr(link);
    // Half blocks: each text line is two module rows, inside a 2-module quiet zone.
    const drawn = stdout.split("\n\n")[1]!.split("\n");
    expect(drawn).toHaveLength(Math.ceil((code.modules.length + 4) / 2));
    const size = code.modules.length;
    const rows: boolean[][] = [];
    for (const line of drawn) {
      const chars = [...line];
      rows.push(chars.map((c) => c === "█" || c === "▀"), chars.map((c) => c === "█" || c === "▄"));
    }
    const modules = rows.slice(2, 2 + size).map((r) => r.slice(2, 2 + size));
    expect(modules).toEqual(code.modules);
    expect((await relay(["sandbox", "activate", "--json"])).stdout).not.toMatch(/[█▀▄]/);
  });

  it("explains each command with --help, colours only when asked, and names the fix in errors", async () => {
    expect((await relay(["toString", "--help"])).stdout).toContain("Usage: relay <command>");
    expect((await relay(["constructor"])).code).toBe(EXIT.usage);
    const send = await relay(["send", "--help"]);
    expect(send.code).toBe(EXIT.ok);
    expect(send.stdout).toMatch(/^Usage: relay send --from LINE --to CONTACT/);
    expect(send.stdout).not.toContain("webhooks create");
    const all = await relay(["--help"]);
    expect(send.stdout).toContain("[--at TIME]");
    for (const command of ["login", "lines", "pools", "capacity", "chats", "messages", "send", "outbox list", "outbox get", "outbox cancel", "outbox reschedule", "outbox approve", "outbox reject", "chats pause", "chats resume", "react", "typing", "read", "files upload", "webhooks", "sandbox", "listen"]) {
      expect(all.stdout).toContain(`  ${command}`);
    }
    const plain = await relay(["lines"]);
    expect(plain.stdout).not.toContain("\x1b[");
    let colored = "";
    await runCli(["lines"], { stdout: (t) => (colored += t), stderr: () => undefined, env: { RELAY_CONFIG_DIR: configDir }, fetch: apiFetch, color: true });
    expect(colored).toContain("\x1b[1mHANDLE");
    expect(colored).toContain("\x1b[32myes");
    const wrongServer = await runCli(["lines", "--base-url", "http://127.0.0.1:9"], { stdout: () => undefined, stderr: (t) => (colored = t), env: { RELAY_CONFIG_DIR: configDir } });
    expect(wrongServer).toBe(EXIT.network);
    expect(colored).toContain("Is the server running at that --base-url?");
    // The long-running commands too: no server at start is an error, not an endless retry.
    for (const args of [["listen", "--forward-to", "http://127.0.0.1:9/x"], ["messages", "--from", f.line.handle, "--follow"]]) {
      let stderr = "";
      const code = await runCli([...args, "--base-url", "http://127.0.0.1:9"], { stdout: () => undefined, stderr: (t) => (stderr += t), env: { RELAY_CONFIG_DIR: configDir } });
      expect(code, args[0]).toBe(EXIT.network);
      expect(stderr).toContain("Could not reach");
    }
  });

  it("Ctrl-C during a wait exits 130 without a stack trace", async () => {
    const abort = new AbortController();
    let stderr = "";
    // The item reads as pending on every poll; Ctrl-C comes after the first one.
    const pendingFetch: typeof fetch = async (input, init) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      if (url.pathname === "/v1/outbox") {
        setTimeout(() => abort.abort(), 50);
        return Response.json({ object: "outbox_item", id: "obx_1", status: "pending", error: null, attempts: 0 });
      }
      return apiFetch(input, init);
    };
    const code = await runCli(["outbox", "get", "obx_1", "--wait"], {
      stdout: () => undefined,
      stderr: (t) => (stderr += t),
      env: { RELAY_CONFIG_DIR: configDir },
      fetch: pendingFetch,
      signal: abort.signal,
    });
    expect(code).toBe(EXIT.interrupted);
    expect(stderr).not.toContain("Error");
  });

  it("messages --follow prints the latest messages, then each new one in that chat as it arrives", async () => {
    const bob = phone();
    await inbound(f, bob, "before following");
    const abort = new AbortController();
    let stdout = "";
    let stderr = "";
    const running = runCli(["messages", "--from", f.line.handle, "--to", bob, "--follow", "--json"], {
      stdout: (t) => (stdout += t),
      stderr: (t) => (stderr += t),
      env: { RELAY_CONFIG_DIR: configDir },
      fetch: apiFetch,
      signal: abort.signal,
    });
    const texts = () => stdout.trim().split("\n").filter(Boolean).map((l) => (JSON.parse(l) as { text: string }).text);
    try {
      await vi.waitFor(() => expect(texts()).toEqual(["before following"]), { timeout: 10_000, interval: 20 });
      await inbound(f, phone(), "another chat");
      await inbound(f, bob, "while following");
      const sent = await relay(["send", "--from", f.line.handle, "--to", bob, "--text", "my reply", "--wait"]);
      expect(sent.code).toBe(EXIT.ok);
      await vi.waitFor(() => expect(texts()).toEqual(["before following", "while following", "my reply"]), { timeout: 10_000, interval: 20 });
    } finally {
      abort.abort();
      expect(await running).toBe(EXIT.ok);
    }
    expect(stderr).toBe("");
    // A brand-new contact: the chat is found from its first message.
    const carol = phone();
    const human = new AbortController();
    stdout = "";
    const following = runCli(["messages", "--from", f.line.handle, "--to", carol, "--follow"], {
      stdout: (t) => (stdout += t),
      stderr: (t) => (stderr += t),
      env: { RELAY_CONFIG_DIR: configDir },
      fetch: apiFetch,
      signal: human.signal,
    });
    try {
      await vi.waitFor(() => expect(stderr).toContain("Following new messages"), { timeout: 10_000, interval: 20 });
      await inbound(f, phone(), "not carol"); // before carol's chat exists: filtered by sender
      await inbound(f, carol, "first words");
      await vi.waitFor(() => expect(stdout).toMatch(new RegExp(`\\${carol}\\s+first words`)), { timeout: 10_000, interval: 20 });
    } finally {
      human.abort();
      await following;
    }
    expect(stdout).not.toContain("not carol");
  });

  it("listen --forward-to posts each event, signed with the printed local secret", async () => {
    const received: { body: string; headers: http.IncomingHttpHeaders }[] = [];
    const receiver = http.createServer((req, res) => {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", () => {
        received.push({ body, headers: req.headers });
        res.writeHead(200).end("ok");
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
    // The secret of this login and server, kept in the config file: the same one every run.
    const printed = JSON.parse((await relay(["listen", "--print-secret", "--json"])).stdout).secret as string;
    expect(printed).toMatch(/^whsec_/);
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const listen = listenInBackground(["--forward-to", url, "--events", "message.received", "--json"]);
    try {
      await listen.ready();
      const { secret } = JSON.parse(listen.out.stdout.split("\n")[0]!);
      expect(secret).toBe(printed);
      const m = await inbound(f, phone(), "forward me");
      await vi.waitFor(() => expect(received).toHaveLength(1), { timeout: 10_000, interval: 20 });
      const event = await verifyWebhook(received[0]!.body, received[0]!.headers as Record<string, string>, secret);
      expect(event).toMatchObject({ event: "message.received", data: { id: m.id, text: "forward me" } });
      await vi.waitFor(() => expect(listen.out.stdout).toContain('"type":"forwarded"'));
    } finally {
      expect(await listen.stop()).toBe(EXIT.ok);
      receiver.closeAllConnections();
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
    }
  });

  it("listen keeps one signing secret per login and server: --print-secret shows it, --rotate-secret replaces it", async () => {
    const print = async (...extra: string[]) => {
      const res = await relay(["listen", "--print-secret", ...extra]);
      expect(res.code, res.stderr).toBe(EXIT.ok);
      return res.stdout.trim();
    };
    const first = await print();
    expect(first).toMatch(/^whsec_[A-Za-z0-9+/=]{32}$/);
    expect(await print()).toBe(first);
    // Saved beside the login, privately; logging in again keeps it.
    expect(statSync(path.join(configDir, "config.json")).mode & 0o777).toBe(0o600);
    expect((await relay(["login", "--key", f.key])).code).toBe(EXIT.ok);
    expect(await print()).toBe(first);
    // Another key, or another server, has its own.
    const other = await makeAccount();
    const otherKey = await print("--key", other.key);
    expect(otherKey).not.toBe(first);
    expect(await print("--base-url", "http://127.0.0.1:4400")).not.toBe(first);
    expect(await print("--key", other.key)).toBe(otherKey);
    // Rotation replaces it for later runs, and only this login's.
    const rotated = JSON.parse((await relay(["listen", "--print-secret", "--rotate-secret", "--json"])).stdout);
    expect(rotated).toMatchObject({ secret: expect.stringMatching(/^whsec_/), rotated: true });
    expect(rotated.secret).not.toBe(first);
    expect(await print()).toBe(rotated.secret);
    expect(await print("--key", other.key)).toBe(otherKey);
    // The config file never holds another key than the login's.
    const saved = readFileSync(path.join(configDir, "config.json"), "utf8");
    expect(saved).not.toContain(other.key);
    expect((await relay(["listen", "--print-secret", "--forward-to", "http://127.0.0.1:1/x"])).code).toBe(EXIT.usage);
  });

  it("listen --forward-to --rotate-secret signs with a new secret and announces it", async () => {
    const before = (await relay(["listen", "--print-secret"])).stdout.trim();
    const listen = listenInBackground(["--forward-to", "http://127.0.0.1:9/hook", "--rotate-secret", "--json"]);
    try {
      await listen.ready();
    } finally {
      await listen.stop();
    }
    const [rotated, ready] = listen.out.stdout.trim().split("\n").map((l) => JSON.parse(l));
    expect(rotated).toMatchObject({ type: "rotated" });
    expect(rotated.secret).not.toBe(before);
    expect(ready).toMatchObject({ type: "ready", secret: rotated.secret });
    expect((await relay(["listen", "--print-secret"])).stdout.trim()).toBe(rotated.secret);
  });

  it("listen still forwards when the config folder cannot be written, with a secret of its own", async () => {
    const blocked = path.join(configDir, "not-a-folder");
    writeFileSync(blocked, "a file where the config folder should be");
    const listen = listenInBackground(["--forward-to", "http://127.0.0.1:9/hook", "--json"], { RELAY_CONFIG_DIR: blocked, RELAY_API_KEY: f.key });
    try {
      await listen.ready();
    } finally {
      await listen.stop();
    }
    expect(JSON.parse(listen.out.stdout.trim().split("\n")[0]!).secret).toMatch(/^whsec_/);
    expect(listen.out.stderr).toContain("Could not save the signing secret");
    const printed = await relay(["listen", "--print-secret"], { RELAY_CONFIG_DIR: blocked, RELAY_API_KEY: f.key });
    expect(printed.code).toBe(EXIT.apiError);
    expect(printed.stderr).toContain("could not keep the signing secret");
  });

  it("send --at +10m schedules the message, held until then; outbox reschedule moves it and outbox cancel calls it off", async () => {
    const env = { RELAY_API_KEY: f.key };
    const before = Date.now();
    const scheduled = await relay(["send", "--from", f.line.handle, "--to", alice, "--text", "in ten minutes", "--at", "+10m"], env);
    expect(scheduled.code, scheduled.stderr).toBe(EXIT.ok);
    const id = scheduled.stdout.match(/^Scheduled (obx_\w+) for \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(pending\)/)?.[1];
    expect(id, scheduled.stdout).toBeDefined();
    expect(scheduled.stdout).toContain(`relay outbox cancel ${id}`);
    const item = JSON.parse((await relay(["outbox", "get", id!, "--json"], env)).stdout);
    expect(item).toMatchObject({ id, status: "pending", hold_reason: "scheduled", attempts: 0 });
    expect(Math.abs(item.not_before - (before + 10 * 60_000))).toBeLessThan(5_000);
    const shown = await relay(["outbox", "get", id!], env);
    expect(shown.code).toBe(EXIT.ok);
    expect(shown.stdout).toMatch(new RegExp(`^${id}: pending \\(held: scheduled until \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d UTC\\), 0 attempt`));
    // Waiting on it says what it waits for, at once, without a minute's wait ending in "Is the server running?".
    const waited = await relay(["outbox", "get", id!, "--wait"], env);
    expect(waited.code).toBe(EXIT.network);
    expect(waited.stderr).toMatch(new RegExp(`^${id} is scheduled until \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d UTC: it has not been sent, and goes then`, "m"));
    expect(waited.stderr).toContain(`relay outbox cancel ${id}`);
    expect(waited.stderr).not.toContain("Is the server running");

    const moved = await relay(["outbox", "reschedule", id!, "--at", "+2h"], env);
    expect(moved.code, moved.stderr).toBe(EXIT.ok);
    expect(moved.stdout).toMatch(new RegExp(`^Rescheduled ${id} for \\d{4}-.* UTC \\(pending\\)`));
    const later = JSON.parse((await relay(["outbox", "get", id!, "--json"], env)).stdout);
    expect(Math.abs(later.not_before - (Date.now() + 2 * 3_600_000))).toBeLessThan(5_000);
    const iso = new Date(Date.now() + 3 * 3_600_000).toISOString().replace(/\.\d+Z$/, "+00:00");
    expect((await relay(["outbox", "reschedule", id!, "--at", iso, "--json"], env)).stdout).toContain(`"not_before": ${Date.parse(iso)}`);

    const canceled = await relay(["outbox", "cancel", id!], env);
    expect(canceled.code, canceled.stderr).toBe(EXIT.ok);
    expect(canceled.stdout).toContain(`Canceled ${id}`);
    const after = await relay(["outbox", "get", id!, "--json"], env);
    expect(JSON.parse(after.stdout)).toMatchObject({ status: "failed", error: "canceled", canceled_at: expect.any(Number) });
    const texts = JSON.parse((await relay(["messages", "--from", f.line.handle, "--to", alice, "--json"], env)).stdout).data.map((m: { text: string }) => m.text);
    expect(texts).not.toContain("in ten minutes");

    // A message already sent cannot be called off or moved: the API's refusal, exit 1.
    const sent = JSON.parse((await relay(["send", "--from", f.line.handle, "--to", alice, "--text", "now", "--wait", "--json"], env)).stdout);
    const refused = await relay(["outbox", "cancel", sent.id], env);
    expect(refused.code).toBe(EXIT.apiError);
    expect(refused.stderr).toContain("outbox_item_not_cancelable");
    expect((await relay(["outbox", "reschedule", sent.id, "--at", "+1h"], env)).stderr).toContain("outbox_item_not_reschedulable");
  });

  it("a bad or past --at is a usage error naming --at, refused before anything is uploaded or sent", async () => {
    const requests: string[] = [];
    const recording: typeof fetch = async (input, init) => {
      requests.push(`${init?.method ?? "GET"} ${new URL(String(input)).pathname}`);
      return apiFetch(input, init);
    };
    const run = async (args: string[]) => {
      let stderr = "";
      const code = await runCli(args, { stdout: () => undefined, stderr: (t) => (stderr += t), env: { RELAY_CONFIG_DIR: configDir, RELAY_API_KEY: f.key }, fetch: recording });
      return { code, stderr };
    };
    const send = ["send", "--from", f.line.handle, "--to", alice, "--text", "x"];
    for (const at of ["tomorrow", "+10x", "10m", "+1.5h", "2026-02-30T10:00:00Z", "2099-12-01T09:00", "1796115600", ""]) {
      const res = await run([...send, "--at", at]);
      expect(res.code, at).toBe(EXIT.usage);
      expect(res.stderr, at).toContain("--at");
      expect(res.stderr, at).toContain("relay --help");
    }
    expect((await run([...send, "--at", "2099-12-01T09:00"])).stderr).toContain("has no time zone: add Z");
    const past = await run([...send, "--at", "2020-01-01T00:00:00Z"]);
    expect(past.code).toBe(EXIT.usage);
    expect(past.stderr).toContain("--at 2020-01-01T00:00:00Z is not in the future");
    expect((await run([...send, "--at", "+0m"])).stderr).toContain("not in the future");
    expect((await run([...send, "--at", "+400d"])).stderr).toContain("--at +400d is more than 365 days ahead");
    // Checked before the attachment is read or uploaded.
    expect((await run(["send", "--from", f.line.handle, "--to", alice, "--attach", "package.json", "--at", "yesterday"])).code).toBe(EXIT.usage);
    expect((await run(["outbox", "reschedule", "obx_1", "--at", "+5"])).stderr).toContain("--at must be");
    expect((await run(["outbox", "reschedule", "obx_1"])).stderr).toContain("--at is required");
    expect((await run(["outbox", "cancel"])).stderr).toContain("usage: relay outbox list | get OBX_ID [--wait] | cancel OBX_ID | reschedule OBX_ID --at TIME | approve OBX_ID | reject OBX_ID");
    expect(requests).toEqual([]);
  });

  it("capacity shows a line's hour and day budgets as a table (--json: the API's answer); pools lists the pools", async () => {
    const g = await makeAccount();
    await setLinePolicy(null, g.line.id, { new_contacts_per_hour: 4, new_contacts_per_day: 20 });
    const env = { RELAY_API_KEY: g.key };
    const bob = phone();
    await inbound(g, bob);
    expect((await relay(["send", "--from", g.line.handle, "--to", bob, "--text", "later", "--at", "+1h"], env)).code).toBe(EXIT.ok);

    const shown = await relay(["capacity", g.line.handle], env);
    expect(shown.code, shown.stderr).toBe(EXIT.ok);
    const [header, row, legend] = shown.stdout.split("\n");
    expect(header).toMatch(/^HANDLE\s+HEALTH\s+NEW\/HOUR\s+NEW\/DAY\s+QUIET\s+WAITING\s+NEXT SLOT$/);
    expect(row).toMatch(new RegExp(`^\\${g.line.handle}\\s+connected\\s+0/4\\s+0/20\\s+no\\s+1 \\(1 scheduled\\)\\s+now$`));
    expect(legend).toContain("per sliding hour and day");
    const raw = JSON.parse((await relay(["capacity", g.line.id, "--json"], env)).stdout);
    expect(raw).toMatchObject({ object: "capacity", from: g.line.id, pool_id: null });
    expect(raw.lines[0].new_contacts).toEqual({
      hour: { used: 0, limit: 4, remaining: 4, resets_at: null },
      day: { used: 0, limit: 20, remaining: 20, resets_at: null },
    });

    expect((await relay(["pools"], env)).stdout.trim()).toBe("(none)");
    const second = await createLine({ accountId: g.accountId, handle: phone(), advancedFeatures: true });
    const pool = await createPool(g.accountId, { name: "sales team", line_ids: [g.line.id, second.id] });
    const pools = await relay(["pools"], env);
    expect(pools.code).toBe(EXIT.ok);
    expect(pools.stdout).toMatch(/^ID\s+NAME\s+LINES\s+CREATED/);
    expect(pools.stdout).toMatch(new RegExp(`${pool.id}\\s+sales team\\s+.*\\${g.line.handle}`));
    expect(pools.stdout).toContain(second.handle);
    expect(JSON.parse((await relay(["pools", "--json"], env)).stdout).data.map((p: { id: string }) => p.id)).toEqual([pool.id]);

    const ofPool = await relay(["capacity", pool.id], env);
    expect(ofPool.stdout).toMatch(new RegExp(`^Pool ${pool.id}: 2 line\\(s\\)\n`));
    expect(ofPool.stdout).toContain(second.handle);
    expect(ofPool.stdout).toMatch(new RegExp(`\\${second.handle}\\s+\\S+\\s+0/10\\s+0/50`)); // an iMessage line's default budgets

    const unknown = await relay(["capacity", newId("pool")], env);
    expect(unknown.code).toBe(EXIT.apiError);
    expect(unknown.stderr).toContain("pool_not_found");
    expect((await relay(["capacity"], env)).code).toBe(EXIT.usage);
  });
});

import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestServer, testServer } from "./harness";

// The client library and the `relay` command as a user gets them: the package is built, packed
// with `npm pack` and installed from the tarball into an empty project; the library is imported
// from there and the CLI runs as that project's `relay` bin, against `next start` on PGlite.

type ClientModule = typeof import("../packages/client/src/index");

const line = "+15550007070";
const contact = "+15550007171";
let app: TestServer;
let key = "";
let project = "";
let client: ClientModule;
let relayBin = "";

interface Received {
  body: string;
  headers: Record<string, string>;
}

/** A loopback HTTP receiver recording every POST, answering 200. */
async function receiver() {
  const received: Received[] = [];
  const waiters: (() => void)[] = [];
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      received.push({ body, headers: req.headers as Record<string, string> });
      res.writeHead(200).end("ok");
      waiters.splice(0).forEach((w) => w());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    received,
    /** Resolves once `n` requests arrived (or rejects after 20 s). */
    async count(n: number) {
      const deadline = Date.now() + 20_000;
      while (received.length < n) {
        if (Date.now() > deadline) throw new Error(`receiver got ${received.length} of ${n} requests`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 200);
        });
      }
      return received.slice(0, n);
    },
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Simulated traffic from the contact to the line (the platform side of the simulator). */
async function inbound(text: string, from = contact) {
  const res = await fetch(`${app.base}/api/simulator/messages`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ line, from, text }),
  });
  expect(res.status).toBe(201);
  return (await res.json()) as { id: string };
}

const cliEnv = () => ({ ...process.env, RELAY_API_KEY: key, RELAY_BASE_URL: app.base, RELAY_CONFIG_DIR: path.join(project, ".relay"), NO_COLOR: "1" });

/** Runs `relay ARGS` to completion: exit code and output. */
function relay(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(relayBin, args, { env: cliEnv(), cwd: project });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c) => (stdout += c));
    child.stderr.on("data", (c) => (stderr += c));
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** Long-running commands still alive, stopped in afterAll even when a test failed midway. */
const running = new Set<ChildProcess>();

/** Starts a long-running `relay ARGS`; `lines()` are its stdout lines so far. */
function relayRunning(...args: string[]) {
  const child: ChildProcess = spawn(relayBin, args, { env: cliEnv(), cwd: project });
  running.add(child);
  child.on("exit", () => running.delete(child));
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (c) => (stdout += c));
  child.stderr!.on("data", (c) => (stderr += c));
  const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
  return {
    lines: () => stdout.split("\n").filter(Boolean),
    stderr: () => stderr,
    async waitFor<T>(pick: (lines: string[]) => T | undefined, what: string): Promise<T> {
      const deadline = Date.now() + 20_000;
      for (;;) {
        const found = pick(stdout.split("\n").filter(Boolean));
        if (found !== undefined) return found;
        if (Date.now() > deadline || child.exitCode !== null) throw new Error(`relay ${args[0]}: no ${what}; stdout ${stdout} stderr ${stderr}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    /** Ctrl-C, and the exit code. */
    async interrupt() {
      child.kill("SIGINT");
      return exited;
    },
  };
}

beforeAll(async () => {
  // Build and pack the package as `npm publish` would, then install the tarball.
  project = mkdtempSync(path.join(tmpdir(), "relay-client-e2e-"));
  const tsc = path.resolve("node_modules/.bin/tsc");
  execFileSync(tsc, ["-p", "packages/client/tsconfig.json"]);
  execFileSync(tsc, ["-p", "packages/client/tsconfig.cli.json"]);
  const packed = execFileSync("npm", ["pack", "--ignore-scripts", "--pack-destination", project, "--silent"], { cwd: "packages/client", encoding: "utf8" }).trim().split("\n").pop()!;
  writeFileSync(path.join(project, "package.json"), JSON.stringify({ name: "user-project", private: true, type: "module" }));
  execFileSync("npm", ["install", "--offline", "--no-audit", "--no-fund", "--silent", path.join(project, packed)], { cwd: project });
  client = (await import(path.join(project, "node_modules/@relay/client/dist/index.js"))) as ClientModule;
  relayBin = path.join(project, "node_modules/.bin/relay");

  app = await testServer({ WEBHOOK_ALLOW_INSECURE: "true" });
  app.admin("account", "create", "--email", "client-e2e@example.com", "--password", "client e2e password");
  app.admin("line", "create", "--account", "client-e2e@example.com", "--handle", line, "--advanced");
  key = app.admin("key", "create", "--account", "client-e2e@example.com", "--name", "client-e2e");
});

afterAll(async () => {
  for (const child of running) child.kill("SIGKILL");
  await app?.dispose();
  if (project) rmSync(project, { recursive: true, force: true });
});

describe("the installed client library against next start", () => {
  it("sends, waits for sent, and pages through messages", async () => {
    const relay = new client.Relay({ apiKey: key, baseUrl: app.base });
    expect((await relay.lines.list()).data.map((l) => l.handle)).toContain(line);
    await inbound("hello library");
    const accepted = await relay.messages.send({ from: line, to: contact, text: "reply from the library" });
    expect(accepted).toMatchObject({ object: "outbox_item", status: "pending" });
    const item = await relay.outbox.wait(accepted.id, { timeoutMs: 20_000 });
    expect(item).toMatchObject({ id: accepted.id, status: "sent", error: null });
    const texts: (string | null)[] = [];
    for await (const m of relay.messages.iterate({ from: line, to: contact, limit: 1 })) texts.push(m.text);
    expect(texts.slice(0, 2)).toEqual(["reply from the library", "hello library"]);

    const refused = await relay.messages.send({ from: line, to: "+15550009999", text: "x" }).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(client.RelayError);
    const { code, status, requestId } = refused as InstanceType<ClientModule["RelayError"]>;
    expect({ code, status, requestId }).toMatchObject({ code: "contact_has_not_messaged", status: 403, requestId: expect.stringMatching(/^req_/) });
  });

  it("receives a simulated inbound message through listen, and verifies a real webhook delivery", async () => {
    const relay = new client.Relay({ apiKey: key, baseUrl: app.base });
    const hooks = await receiver();
    try {
      const hook = await relay.webhooks.create({ from: line, url: hooks.url, events: ["message.received"] });
      const abort = new AbortController();
      let session = "";
      const events = relay.listen({ events: "message.received" }, { signal: abort.signal, onSession: (s) => (session = s.session) });
      const first = events.next();
      const deadline = Date.now() + 10_000;
      while (!session && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      await inbound("via listen");
      const { value } = await first;
      expect(value).toMatchObject({ event: "message.received", data: { text: "via listen", line_handle: line } });
      abort.abort();
      expect(session).toMatch(/^lsn_/);

      const [delivery] = await hooks.count(1);
      const event = await client.verifyWebhook(delivery!.body, delivery!.headers, hook.secret!);
      expect(event).toMatchObject({ event: "message.received", data: { text: "via listen" } });
      await expect(client.verifyWebhook(delivery!.body.replace("via listen", "forged"), delivery!.headers, hook.secret!)).rejects.toBeInstanceOf(
        client.WebhookVerificationError,
      );
      await relay.webhooks.delete(hook.id);
    } finally {
      await hooks.close();
    }
  });
});

describe("the installed relay command against next start", () => {
  it("lists, sends with --wait, and exits with the documented codes", async () => {
    const lines = await relay("lines", "--json");
    expect(lines.code).toBe(0);
    expect(JSON.parse(lines.stdout).data.map((l: { handle: string }) => l.handle)).toContain(line);

    const sent = await relay("send", "--from", line, "--to", contact, "--text", "from the installed cli", "--wait", "--json");
    expect(sent.code).toBe(0);
    expect(JSON.parse(sent.stdout)).toMatchObject({ object: "outbox_item", status: "sent" });
    const human = await relay("send", "--from", line, "--to", contact, "--text", "human output", "--wait");
    expect(human.stdout).toMatch(/^obx_\w+: sent, 1 attempt\(s\)$/m);
    expect(human.stderr).toContain("Waiting for obx_"); // progress, on stderr (not a TTY here: plain lines)

    expect((await relay("send", "--from", line, "--to", "+15550009999", "--text", "x")).code).toBe(1);
    expect((await relay("send", "--from", line)).code).toBe(2);
    const badKey = spawn(relayBin, ["lines"], { env: { ...cliEnv(), RELAY_API_KEY: "sk_live_not_a_key" } });
    expect(await new Promise((r) => badKey.on("close", r))).toBe(3);
    const closedPort = await new Promise<number>((resolve) => {
      const probe = http.createServer().listen(0, "127.0.0.1", () => {
        const { port } = probe.address() as AddressInfo;
        probe.close(() => resolve(port));
      });
    });
    const noServer = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(relayBin, ["lines", "--base-url", `http://127.0.0.1:${closedPort}`], { env: cliEnv() });
      let stderr = "";
      child.stderr.on("data", (c) => (stderr += c));
      child.on("close", (code) => resolve({ code, stderr }));
    });
    expect(noServer.code).toBe(4);
    expect(noServer.stderr).toContain(`Could not reach http://127.0.0.1:${closedPort} (ECONNREFUSED)`);
  });

  it("listen --forward-to delivers a simulated inbound message signed with the printed secret, and resumes across a server restart", async () => {
    const local = await receiver();
    let exitCode: number | null = null;
    const listen = relayRunning("listen", "--forward-to", local.url, "--events", "message.received", "--json");
    try {
      const ready = await listen.waitFor((lines) => lines.map((l) => JSON.parse(l)).find((e) => e.type === "ready"), "ready line");
      expect(ready.secret).toMatch(/^whsec_/);
      const m = await inbound("forward me");
      const [forwarded] = await local.count(1);
      const event = await client.verifyWebhook(forwarded!.body, forwarded!.headers, ready.secret);
      expect(event).toMatchObject({ event: "message.received", data: { id: m.id, text: "forward me" } });
      await expect(client.verifyWebhook(forwarded!.body, forwarded!.headers, "whsec_b3RoZXI=")).rejects.toBeInstanceOf(client.WebhookVerificationError);

      // The server restarts under the running listener (and an open GraphQL subscription: a
      // stopping server ends its streams, or `next start` would wait for them forever). The
      // listener reconnects with its session; a message arriving around its return (the server
      // is started while it waits out a 2 s backoff) is forwarded, once.
      const subscription = await fetch(`${app.base}/api/graphql`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, accept: "text/event-stream", "content-type": "application/json" },
        body: JSON.stringify({ query: "subscription { messageReceived { id } }" }),
      });
      expect(subscription.headers.get("content-type")).toContain("text/event-stream");
      const subscriptionText = subscription.text();
      await app.stop();
      expect(await subscriptionText).toContain("event: complete");
      await listen.waitFor((lines) => lines.find((l) => l.includes('"attempt":3')), "third reconnection attempt");
      await app.start();
      const after = await inbound("while reconnecting");
      const all = await local.count(2);
      const second = await client.verifyWebhook(all[1]!.body, all[1]!.headers, ready.secret);
      expect(second).toMatchObject({ data: { id: after.id, text: "while reconnecting" } });
      // Nothing twice: a later message is the next thing forwarded.
      const last = await inbound("after the restart");
      const three = await local.count(3);
      expect(JSON.parse(three[2]!.body)).toMatchObject({ data: { id: last.id } });
      expect(new Set(three.map((r) => r.headers["x-webhook-delivery-id"])).size).toBe(3);
      const sessions = listen.lines().filter((l) => l.includes('"type":"ready"')).map((l) => JSON.parse(l).session);
      expect(sessions.length).toBeGreaterThanOrEqual(2);
      expect(new Set(sessions)).toEqual(new Set([ready.session]));
    } finally {
      exitCode = await listen.interrupt();
      await local.close();
    }
    expect(exitCode).toBe(0);
  });

  it("messages --follow prints new messages as they arrive", async () => {
    await inbound("before following");
    const follow = relayRunning("messages", "--from", line, "--to", contact, "--follow", "--json");
    let exitCode: number | null = null;
    try {
      const texts = (lines: string[]) => lines.map((l) => (JSON.parse(l) as { text: string }).text);
      await follow.waitFor((lines) => (texts(lines).at(-1) === "before following" ? true : undefined), "backlog");
      await inbound("live one");
      await follow.waitFor((lines) => (texts(lines).at(-1) === "live one" ? true : undefined), "live message");
    } finally {
      exitCode = await follow.interrupt();
    }
    expect(exitCode).toBe(0);
  });
});

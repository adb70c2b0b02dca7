import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { EXIT, runCli } from "@/packages/client/src/cli/run";
import { errorOf, RpcLine, ToolData } from "./mcp-results";
import { dispatch, inbound, makeAccount, makeKey, phone, post, runDelivery } from "./helpers";

// `relay mcp` as a desktop agent app runs it: a separate process spoken to over stdin and
// stdout, logged in with `relay login`, proxying to the server's /api/mcp, here the real route
// handlers served on a loopback port. The SDK's own stdio client drives the tools; a raw pipe
// checks what the proxy makes of HTTP failures, cancellations and the end of stdin.

runDelivery();

const TSX = path.resolve("node_modules/.bin/tsx");
const CLI = path.resolve("packages/client/src/cli/index.ts");
const dirs: string[] = [];
let server: http.Server;
let baseUrl = "";

/** The route handlers as a network server; a request the client drops aborts the handler's Request, as in Next. */
function serve(): Promise<string> {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    const abort = new AbortController();
    res.on("close", () => {
      if (!res.writableEnded) abort.abort();
    });
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const headers = new Headers();
      for (const [name, value] of Object.entries(req.headers)) if (typeof value === "string") headers.set(name, value);
      const body = chunks.length && req.method !== "GET" && req.method !== "HEAD" ? Buffer.concat(chunks) : undefined;
      try {
        const response = await dispatch(new Request(`http://localhost:3000${req.url}`, { method: req.method, headers, body, signal: abort.signal }));
        const bytes = Buffer.from(await response.arrayBuffer());
        if (!res.destroyed) res.writeHead(response.status, Object.fromEntries(response.headers)).end(bytes);
      } catch {
        if (!res.destroyed) res.writeHead(500).end();
      }
    });
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
}

beforeAll(async () => {
  baseUrl = await serve();
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A config directory logged in to the test server with `key`, as `relay login` leaves it. */
async function loggedIn(key: string): Promise<string> {
  const dir = mkdtempSync(path.join(tmpdir(), "relay-mcp-"));
  dirs.push(dir);
  let stderr = "";
  const code = await runCli(["login", "--key", key, "--base-url", baseUrl], { stdout: () => undefined, stderr: (t) => (stderr += t), env: { RELAY_CONFIG_DIR: dir } });
  expect(code, stderr).toBe(EXIT.ok);
  return dir;
}

const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
});

/** The SDK's stdio client, starting `relay mcp` with the login in `configDir`. */
async function connect(configDir: string): Promise<{ client: Client; stderr: () => string }> {
  const transport = new StdioClientTransport({ command: TSX, args: [CLI, "mcp"], cwd: process.cwd(), env: { RELAY_CONFIG_DIR: configDir }, stderr: "pipe" });
  let stderr = "";
  transport.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
  const client = new Client({ name: "desktop-app", version: "1.0.0" });
  await client.connect(transport);
  clients.push(client);
  // From then on the client checks every structuredContent against its tool's outputSchema.
  await client.listTools();
  return { client, stderr: () => stderr };
}


async function callTool(client: Client, name: string, args: Record<string, unknown>) {
  const result = (await client.callTool({ name, arguments: args }, undefined, { timeout: 60_000 })) as CallToolResult;
  const text = result.content.map((c) => (c.type === "text" ? c.text : "")).join("");
  return { isError: result.isError === true, data: ToolData.parse(result.structuredContent ?? {}), text };
}

/** `relay mcp` on a raw pipe: send lines, read the JSON-RPC lines it answers, see how it exits. */
function rawProxy(env: Record<string, string>) {
  const child: ChildProcessWithoutNullStreams = spawn(TSX, [CLI, "mcp"], { cwd: process.cwd(), env: { ...process.env, ...env } });
  const lines: RpcLine[] = [];
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => {
    stdout += d.toString();
    let end: number;
    while ((end = stdout.indexOf("\n")) >= 0) {
      lines.push(RpcLine.parse(JSON.parse(stdout.slice(0, end)))); // anything but a JSON line fails the test
      stdout = stdout.slice(end + 1);
    }
  });
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return {
    lines,
    stderr: () => stderr,
    send: (message: unknown) => child.stdin.write(`${typeof message === "string" ? message : JSON.stringify(message)}\n`),
    answer: (id: unknown) => vi.waitFor(() => lines.find((l) => l.id === id) ?? expect.fail(`no answer to ${JSON.stringify(id)} yet`), { timeout: 30_000, interval: 20 }),
    end: () => {
      child.stdin.end();
      return exited;
    },
    kill: () => child.kill(),
  };
}

const initialize = (id: number | string) => ({
  jsonrpc: "2.0",
  id,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
});

describe("relay mcp (stdio)", { timeout: 120_000 }, () => {
  it("serves the tools with the saved login: sends, reads, waits for the reply, and each guardrail refuses with its code", async () => {
    const f = await makeAccount();
    const [alice, bob] = [phone(), phone()];
    await inbound(f, alice, "hello agent");
    await inbound(f, bob, "hi");
    const { client, stderr } = await connect(await loggedIn(f.key));
    expect(client.getServerVersion()?.name).toBe("relay-messaging");
    expect(client.getInstructions()).toContain("recipient_not_allowed");

    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(["list_lines", "list_chats", "read_messages", "send_message", "get_outbox_item", "wait_for_reply"]));
    expect(tools.find((t) => t.name === "send_message")!.inputSchema.required).toEqual(expect.arrayContaining(["from", "to"]));

    const sent = await callTool(client, "send_message", { from: f.line.handle, to: alice, text: "hi from the desktop agent" });
    expect(sent.isError, sent.text).toBe(false);
    expect(sent.data).toMatchObject({ object: "outbox_item", status: "pending" });
    await vi.waitFor(async () => expect((await callTool(client, "get_outbox_item", { id: sent.data.id })).data.status).toBe("sent"), { timeout: 15_000, interval: 100 });
    const read = await callTool(client, "read_messages", { from: f.line.handle, to: alice, limit: 5 });
    expect(read.data.data!.map((m) => m.text)).toEqual(["hi from the desktop agent", "hello agent"]);

    const waiting = callTool(client, "wait_for_reply", { from: f.line.handle, to: alice, timeout_seconds: 30 });
    await new Promise((r) => setTimeout(r, 500));
    await inbound(f, alice, "the answer");
    const reply = await waiting;
    expect(reply.data).toMatchObject({ object: "wait_result", status: "replied", message: { text: "the answer", is_from_me: false } });
    expect(reply.text).toContain("the answer");

    // Every guardrail, through the proxy: one agent key with all four.
    const carol = phone();
    await inbound(f, carol, "hi");
    const guardrails = { allow_to: [alice, bob], require_approval: true, max_sends_per_chat_without_reply: 1, max_sends_per_day: 2 };
    const agent = await connect(await loggedIn(await makeKey(f.accountId, { guardrails })));
    const send = (to: string, text: string) => callTool(agent.client, "send_message", { from: f.line.handle, to, text });
    const refusal = async (to: string, text: string) => {
      const r = await send(to, text);
      expect(r.isError, r.text).toBe(true);
      expect(r.text).toContain(errorOf(r.data).code);
      return errorOf(r.data).code as string;
    };
    expect(await refusal(carol, "not on the list")).toBe("recipient_not_allowed");
    const held = await send(alice, "on the list");
    expect(held.isError, held.text).toBe(false);
    expect((await callTool(agent.client, "get_outbox_item", { id: held.data.id })).data).toMatchObject({ status: "pending", hold_reason: "approval" });
    expect(await refusal(alice, "again, before any reply")).toBe("reply_required");
    const bobChat = (await callTool(client, "list_chats", { from: f.line.handle })).data.data!.find((c) => c.identifier === bob)!;
    await post(`/v1/chats/pause?id=${bobChat.id}`, f.key);
    expect(await refusal(bob, "while a person answers")).toBe("chat_paused");
    await post(`/v1/chats/resume?id=${bobChat.id}`, f.key);
    expect((await send(bob, "one for bob")).isError).toBe(false);
    // Alice answered, so a reply to her is due; but two sends today are the key's cap.
    await inbound(f, alice, "a reply");
    expect(await refusal(alice, "a third today")).toBe("key_send_limit_exceeded");
    expect(stderr()).toContain(`serving the MCP tools of ${baseUrl}/api/mcp`);
  });

  it("answers a refused key, an oversized message and a parse error as JSON-RPC errors with the request's id, and keeps serving", async () => {
    const f = await makeAccount();
    const good = rawProxy({ RELAY_CONFIG_DIR: await loggedIn(f.key) });
    const revoked = rawProxy({ RELAY_CONFIG_DIR: mkdtempSync(path.join(tmpdir(), "relay-mcp-")), RELAY_API_KEY: "sk_live_notakeynotakeynotakey", RELAY_BASE_URL: baseUrl });
    try {
      revoked.send(initialize("init-1"));
      expect(await revoked.answer("init-1")).toMatchObject({
        jsonrpc: "2.0",
        error: { code: -32000, message: expect.stringContaining("invalid_api_key"), data: { http_status: 401, error: { code: "invalid_api_key" } } },
      });
      expect((await revoked.answer("init-1")).error!.message).toContain("relay login");
      revoked.send(initialize(2));
      expect((await revoked.answer(2)).error!.message).toContain("invalid_api_key");

      good.send(initialize(1));
      expect(await good.answer(1)).toMatchObject({ result: { serverInfo: { name: "relay-messaging" } } });
      good.send({ jsonrpc: "2.0", method: "notifications/initialized" });
      // Over MAX_JSON_BODY_BYTES (1 MiB): refused by the server before MCP reads it.
      good.send({ jsonrpc: "2.0", id: "big", method: "tools/call", params: { name: "list_lines", arguments: { pad: "x".repeat(1_200_000) } } });
      expect(await good.answer("big")).toMatchObject({ error: { code: -32000, message: expect.stringContaining("request_too_large"), data: { http_status: 413 } } });
      good.send("{not json");
      await vi.waitFor(() => expect(good.lines.some((l) => l.id === null && l.error?.code === -32700)).toBe(true));
      good.send({ jsonrpc: "2.0", id: 3, method: "tools/list" });
      expect(z.object({ tools: z.array(z.unknown()) }).parse((await good.answer(3)).result).tools.length).toBeGreaterThan(5);
      // A notification is answered 202 with no body: nothing on stdout for it.
      expect(good.lines.map((l) => l.id)).toEqual([1, "big", null, 3]);
      expect(await good.end()).toBe(0);
      expect(await revoked.end()).toBe(0);
    } finally {
      good.kill();
      revoked.kill();
    }
  });

  it("answers with an error while the server is down, drops a canceled request, and exits 0 when stdin ends", async () => {
    const f = await makeAccount();
    const alice = phone();
    await inbound(f, alice, "hi");
    // A port nothing listens on: taken, then let go.
    const closed = http.createServer();
    const port = await new Promise<number>((resolve) => closed.listen(0, "127.0.0.1", () => resolve((closed.address() as AddressInfo).port)));
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const down = rawProxy({ RELAY_CONFIG_DIR: mkdtempSync(path.join(tmpdir(), "relay-mcp-")), RELAY_API_KEY: f.key, RELAY_BASE_URL: `http://127.0.0.1:${port}` });
    const proxy = rawProxy({ RELAY_CONFIG_DIR: await loggedIn(f.key) });
    try {
      down.send(initialize(1));
      expect(await down.answer(1)).toMatchObject({ error: { code: -32000, message: expect.stringMatching(/Could not reach http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)/) } });
      down.send({ jsonrpc: "2.0", id: 2, method: "tools/list" });
      expect((await down.answer(2)).error!.message).toContain("Could not reach");
      expect(await down.end()).toBe(0);

      proxy.send(initialize(1));
      await proxy.answer(1);
      proxy.send({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "wait_for_reply", arguments: { from: f.line.handle, to: alice, timeout_seconds: 60 } } });
      await new Promise((r) => setTimeout(r, 500));
      proxy.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 7, reason: "the user stopped it" } });
      proxy.send({ jsonrpc: "2.0", id: 8, method: "tools/list" });
      await proxy.answer(8);
      const started = Date.now();
      // Nothing is left waiting (the 60 s wait was dropped), so the end of stdin ends it at once.
      expect(await proxy.end()).toBe(0);
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(proxy.lines.map((l) => l.id)).toEqual([1, 8]);
    } finally {
      down.kill();
      proxy.kill();
    }
  });
});
